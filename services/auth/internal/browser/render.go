package browser

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Static returns the files served under /oauth/static/.
func Static() fs.FS {
	sub, _ := fs.Sub(staticFS, "static")
	return sub
}

type pages struct {
	login, consent, message, apps, logout *template.Template
}

func parsePages() (*pages, error) {
	load := func(name string) (*template.Template, error) {
		t, err := template.New("").ParseFS(templateFS, "templates/layout.html", "templates/"+name)
		if err != nil {
			return nil, fmt.Errorf("parsing template %s: %w", name, err)
		}
		return t, nil
	}
	var p pages
	var err error
	if p.login, err = load("login.html"); err != nil {
		return nil, err
	}
	if p.consent, err = load("consent.html"); err != nil {
		return nil, err
	}
	if p.message, err = load("message.html"); err != nil {
		return nil, err
	}
	if p.apps, err = load("apps.html"); err != nil {
		return nil, err
	}
	if p.logout, err = load("logout.html"); err != nil {
		return nil, err
	}
	return &p, nil
}

// Org is the organization shown on every page.
type Org struct {
	Name    string
	LogoURL template.URL
}

// securityHeaders go on every page of the authorization server: never
// framed, no referrer, nothing loaded from other origins.
func securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	c.Next()
}

func (h *Handler) render(c *gin.Context, status int, t *template.Template, data map[string]any) {
	data["Org"] = h.org
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		h.log.ErrorContext(c.Request.Context(), "rendering page failed", "error", err.Error())
		c.Status(http.StatusInternalServerError)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// message renders a page with a heading and lines; used for errors too.
func (h *Handler) message(c *gin.Context, status int, title, heading, alert string, lines ...string) {
	h.render(c, status, h.pages.message, map[string]any{"Title": title, "Heading": heading, "Error": alert, "Lines": lines})
}

// invalidRequest is the error page of the contract: status 400, never a redirect.
func (h *Handler) invalidRequest(c *gin.Context, why string) {
	h.message(c, http.StatusBadRequest, "Invalid request", "Invalid request", "This authorization request is an invalid request.", why,
		"If an app sent you here, tell its developers; you can close this page.")
}

func (h *Handler) unavailable(c *gin.Context) {
	c.Header("Retry-After", "5")
	h.message(c, http.StatusServiceUnavailable, "Temporarily unavailable", "Sign-in is temporarily unavailable", "",
		"A service we depend on is not answering. Please try again in a minute.")
}

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
