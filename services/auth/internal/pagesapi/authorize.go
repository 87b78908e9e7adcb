package pagesapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/services/auth/internal/authorize"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// authorize is the authorization endpoint: sign-in page, consent page or
// the answer to the app, as the rules decide.
func (h *Handler) authorize(c *gin.Context) {
	r, ok := h.parse(c)
	if !ok {
		return
	}
	sess, ok := h.currentSession(c)
	if !ok {
		return
	}
	out, err := h.rules.Authorize.Authorize(c.Request.Context(), sess, r)
	if err != nil {
		h.authorizeFailed(c, r, err)
		return
	}
	switch out.Step {
	case authorize.SignIn:
		next := c.Request.URL.Path + "?" + authorize.AfterSignIn(c.Request.URL.Query()).Encode()
		h.renderLogin(c, http.StatusOK, next, r.Client.Name, r.LoginHint, "")
	case authorize.Consent:
		h.renderConsent(c, out.Request)
	default:
		h.respond(c, out.Response)
	}
}

// decide handles the consent form: Authorize or Deny, all or nothing.
func (h *Handler) decide(c *gin.Context) {
	r, ok := h.parse(c)
	if !ok {
		return
	}
	sess, ok := h.formSession(c, c.Request.URL.RequestURI())
	if !ok {
		return
	}
	var authorized bool
	switch c.PostForm("decision") {
	case "deny":
	case "authorize":
		authorized = true
	default:
		h.invalidRequest(c, "The form did not say Authorize or Deny.")
		return
	}
	resp, err := h.rules.Authorize.Decide(c.Request.Context(), *sess, r, authorized)
	if err != nil {
		h.authorizeFailed(c, r, err)
		return
	}
	h.respond(c, resp)
}

// parse validates the authorization request; ok is false when it answered.
func (h *Handler) parse(c *gin.Context) (authorize.Request, bool) {
	r, err := h.rules.Authorize.Parse(c.Request.Context(), c.Request.URL.Query())
	if err != nil {
		h.authorizeFailed(c, r, err)
		return r, false
	}
	return r, true
}

// authorizeFailed answers an error of the authorization rules for r.
func (h *Handler) authorizeFailed(c *gin.Context, r authorize.Request, err error) {
	var (
		untrusted *authorize.UntrustedError
		refused   *authorize.Error
	)
	switch {
	case errors.As(err, &untrusted):
		h.invalidRequest(c, untrusted.Why)
	case errors.As(err, &refused):
		h.respond(c, h.rules.Authorize.ErrorResponse(r, refused))
	case errors.Is(err, authorize.ErrAccountGone):
		h.setCookie(c, sessionCookie, "", -1)
		h.invalidRequest(c, "Your account is no longer available.")
	default:
		h.log.WarnContext(c.Request.Context(), "authorization failed", "error", err.Error())
		h.unavailable(c)
	}
}

// respond sends the browser back to the app with resp: a redirect (302
// after a GET, 303 after a POST), or with form_post a page whose form the
// browser posts to the app at once.
func (h *Handler) respond(c *gin.Context, resp authorize.Response) {
	if resp.Mode == authorize.ModeFormPost {
		h.renderFormPost(c, resp)
		return
	}
	h.redirect(c, resp.URL())
}

// redirect sends the browser away to u: 302 after a GET, 303 after a POST
// (which the browser follows with a GET).
func (h *Handler) redirect(c *gin.Context, u string) {
	status := http.StatusFound
	if c.Request.Method == http.MethodPost {
		status = http.StatusSeeOther
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(status, u)
}

type scopeView struct {
	Name, Description string
	Sensitive         bool
}

func (h *Handler) renderConsent(c *gin.Context, r authorize.Request) {
	views := scopeViews(r.Scopes)
	sensitive := false
	for _, v := range views {
		sensitive = sensitive || v.Sensitive
	}
	h.render(c, http.StatusOK, h.pages.consent, map[string]any{
		"Title": "Authorize " + r.Client.Name, "ClientName": r.Client.Name, "ClientDescription": r.Client.Description,
		"Scopes": views, "AnySensitive": sensitive, "Withheld": scopeViews(r.Withheld), "CSRF": h.csrfToken(c), "Action": c.Request.URL.Path + "?" + c.Request.URL.RawQuery,
	})
}

// scopeViews describe the scopes names.
func scopeViews[S ~[]string](names S) []scopeView {
	var out []scopeView
	for _, n := range names {
		s, _ := scope.Lookup(n)
		out = append(out, scopeView{Name: n, Description: s.Description, Sensitive: s.Sensitive})
	}
	return out
}
