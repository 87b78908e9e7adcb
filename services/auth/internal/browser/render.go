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
	login, consent, message, apps *template.Template
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

const (
	sessionCookie = "eventreg_session"
	csrfCookie    = "eventreg_csrf"
	cookiePath    = "/oauth"
)

func (h *Handler) secure(c *gin.Context) bool {
	return h.secureCookies || c.Request.TLS != nil || strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https")
}

func (h *Handler) setCookie(c *gin.Context, name, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{Name: name, Value: value, Path: cookiePath, MaxAge: maxAge,
		HttpOnly: true, Secure: h.secure(c), SameSite: http.SameSiteLaxMode})
}

// csrfToken returns the form token of this browser, setting its anchor
// cookie when missing (double-submit, keyed: a token is an HMAC of the anchor).
func (h *Handler) csrfToken(c *gin.Context) string {
	anchor, err := c.Cookie(csrfCookie)
	if err != nil || len(anchor) < 20 || len(anchor) > 100 {
		anchor = randtoken.New(32)
		h.setCookie(c, csrfCookie, anchor, 0)
	}
	return h.csrfFor(anchor)
}

func (h *Handler) csrfFor(anchor string) string {
	m := hmac.New(sha256.New, h.csrfKey)
	m.Write([]byte("csrf|" + anchor))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfValid checks the form's token against the anchor cookie in constant time.
func (h *Handler) csrfValid(c *gin.Context) bool {
	anchor, err := c.Cookie(csrfCookie)
	if err != nil || anchor == "" {
		return false
	}
	return hmac.Equal([]byte(c.PostForm("csrf_token")), []byte(h.csrfFor(anchor)))
}

func (h *Handler) csrfFailed(c *gin.Context) {
	h.message(c, http.StatusForbidden, "Form expired", "This form has expired", "The form could not be verified (it may be old, or sent from another site).",
		"Go back, reload the page and try again.")
}
