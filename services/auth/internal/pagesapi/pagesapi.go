// Package pagesapi serves the browser side of the authorization server over HTTP: the authorization endpoint with its sign-in and consent pages, logout, and the user's list of authorized apps. It parses requests, calls the rules (packages signin, authorize and logout) and renders pages and responses.
package pagesapi

import (
	"html/template"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/services/auth/internal/authorize"
	"github.com/eventreg/eventreg/services/auth/internal/logout"
	"github.com/eventreg/eventreg/services/auth/internal/signin"
)

// Config are the settings of the pages.
type Config struct {
	OrgName, OrgLogoURL string
	// SecureCookies forces the Secure attribute (an https issuer).
	SecureCookies bool
	// CSRFKey keys the CSRF tokens (an HMAC-SHA256 key); the same on every replica.
	CSRFKey []byte
}

// Rules are the business services the pages call.
type Rules struct {
	SignIn    *signin.Service
	Authorize *authorize.Service
	Logout    *logout.Service
}

// Handler serves the pages.
type Handler struct {
	rules         Rules
	pages         *pages
	org           Org
	secureCookies bool
	csrfKey       []byte
	log           *slog.Logger
}

// New returns the pages' handler.
func New(cfg Config, rules Rules, log *slog.Logger) (*Handler, error) {
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Handler{rules: rules, pages: p, org: Org{Name: cfg.OrgName, LogoURL: template.URL(cfg.OrgLogoURL)},
		secureCookies: cfg.SecureCookies, csrfKey: append([]byte(nil), cfg.CSRFKey...), log: log}, nil
}

// PathLogin is the sign-in page and its form's target. Its POST is bound by
// USERS_TIMEOUT (the password check) plus LOGIN_FAILURE_DELAY (the slow-down
// of a failed guess), not by the server's REQUEST_TIMEOUT: serve exempts it,
// so that neither is cut short.
const PathLogin = "/oauth/login"

// Register adds the routes under /oauth to r.
func (h *Handler) Register(r gin.IRouter) {
	g := r.Group("/oauth", securityHeaders)
	g.GET("/authorize", h.authorize)
	g.POST("/authorize", h.decide)
	g.GET(strings.TrimPrefix(PathLogin, "/oauth"), h.loginPage)
	g.POST(strings.TrimPrefix(PathLogin, "/oauth"), h.login)
	g.GET("/logout", h.logout)
	g.POST("/logout", h.logoutConfirmed)
	g.GET("/apps", h.apps)
	g.POST("/apps/revoke", h.revokeApp)
	g.StaticFS("/static", http.FS(Static()))
}
