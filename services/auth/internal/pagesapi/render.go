package pagesapi

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/services/auth/internal/authorize"
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
	login, consent, message, apps, logout, formPost *template.Template
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
	for _, page := range []struct {
		t    **template.Template
		file string
	}{{&p.login, "login.html"}, {&p.consent, "consent.html"}, {&p.message, "message.html"}, {&p.apps, "apps.html"},
		{&p.logout, "logout.html"}, {&p.formPost, "form_post.html"}} {
		t, err := load(page.file)
		if err != nil {
			return nil, err
		}
		*page.t = t
	}
	return &p, nil
}

// Org is the organization shown on every page.
type Org struct {
	Name    string
	LogoURL template.URL
}

// securityHeaders go on every page of the authorization server: never
// framed, no referrer, nothing loaded from other origins, no script.
func securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	c.Next()
}

// contentSecurityPolicy is every page's; a page with a script adds its
// nonce (scriptPolicy).
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"

// scriptPolicy is contentSecurityPolicy allowing the one inline script
// whose nonce attribute is nonce: a new nonce for every answer, so an
// injected script cannot run.
func scriptPolicy(nonce string) string {
	return contentSecurityPolicy + "; script-src 'nonce-" + nonce + "'"
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

type formField struct{ Name, Value string }

// renderFormPost answers with resp in the form_post response mode: a page
// whose form the browser posts to the app's redirect URI at once (a script
// allowed by its nonce), or when it runs no script at the press of a
// button (decision 0109).
func (h *Handler) renderFormPost(c *gin.Context, resp authorize.Response) {
	var fields []formField
	for _, k := range slices.Sorted(maps.Keys(resp.Params)) {
		for _, v := range resp.Params[k] {
			fields = append(fields, formField{Name: k, Value: v})
		}
	}
	nonce := randtoken.New(18)
	c.Header("Content-Security-Policy", scriptPolicy(nonce))
	h.render(c, http.StatusOK, h.pages.formPost, map[string]any{"Title": "Returning to the app", "Action": resp.RedirectURI, "Fields": fields, "Nonce": nonce})
}
