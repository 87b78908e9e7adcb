package pagesapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
)

// The cookies' base names. Over https they carry the __Host- prefix, with
// Path=/, Secure and no Domain: the browser then accepts them only from this
// host over https, so a sibling subdomain or a plain-http answer cannot plant
// or overwrite them. Over plain http (local development) they keep the base
// name and Path=/oauth.
const (
	sessionCookie = "eventreg_session"
	csrfCookie    = "eventreg_csrf"
	cookiePath    = "/oauth"
	hostPrefix    = "__Host-"
)

// secure tells a request that reached the server over https: an https
// issuer, TLS here, or X-Forwarded-Proto from a trusted proxy
// (TRUSTED_PROXIES, as for the client address); anyone else's header is
// ignored.
func (h *Handler) secure(c *gin.Context) bool {
	return h.secureCookies || c.Request.TLS != nil ||
		(strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https") && httpserver.FromTrustedProxy(c))
}

// cookie reads the cookie named base under the name this request's security gives it.
func (h *Handler) cookie(c *gin.Context, base string) (string, error) {
	if h.secure(c) {
		return c.Cookie(hostPrefix + base)
	}
	return c.Cookie(base)
}

func (h *Handler) setCookie(c *gin.Context, base, value string, maxAge int) {
	ck := &http.Cookie{Name: base, Value: value, Path: cookiePath, MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteLaxMode}
	if h.secure(c) {
		ck.Name, ck.Path, ck.Secure = hostPrefix+base, "/", true
	}
	http.SetCookie(c.Writer, ck)
}

func newAnchor() string { return randtoken.New(32) }

// csrfToken returns the form token of this browser, setting its anchor
// cookie when missing. The token is an HMAC of the anchor and of the session
// cookie (empty before sign-in): a token is good only with the cookies it was
// made for, and sign-in (new session, new anchor) makes older tokens worthless.
func (h *Handler) csrfToken(c *gin.Context) string {
	anchor, err := h.cookie(c, csrfCookie)
	if err != nil || len(anchor) < 20 || len(anchor) > 100 {
		anchor = newAnchor()
		h.setCookie(c, csrfCookie, anchor, 0)
	}
	sess, _ := h.cookie(c, sessionCookie)
	return h.csrfFor(anchor, sess)
}

func (h *Handler) csrfFor(anchor, session string) string {
	m := hmac.New(sha256.New, h.csrfKey)
	fmt.Fprintf(m, "csrf|%d|%s|%s", len(anchor), anchor, session)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfValid checks the form's token against the anchor and session cookies in constant time.
func (h *Handler) csrfValid(c *gin.Context) bool {
	anchor, err := h.cookie(c, csrfCookie)
	if err != nil || anchor == "" {
		return false
	}
	sess, _ := h.cookie(c, sessionCookie)
	return hmac.Equal([]byte(c.PostForm("csrf_token")), []byte(h.csrfFor(anchor, sess)))
}

func (h *Handler) csrfFailed(c *gin.Context) {
	h.message(c, http.StatusForbidden, "Form expired", "This form has expired", "The form could not be verified (it may be old, or sent from another site).",
		"Go back, reload the page and try again.")
}
