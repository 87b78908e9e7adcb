package pagesapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/services/auth/internal/logout"
)

// logout asks a signed-in browser to confirm: a GET (a link, or an <img> on
// another site) never ends a session. Without a session there is nothing to
// end, and the browser goes where a finished sign-out goes.
func (h *Handler) logout(c *gin.Context) {
	p, err := h.rules.Logout.Check(c.Request.Context(), logout.Request{ClientID: c.Query("client_id"), AccessToken: c.Query("access_token"),
		IDTokenHint: c.Query("id_token_hint"), PostLogoutRedirectURI: c.Query("post_logout_redirect_uri"), State: c.Query("state"), Next: c.Query("next")})
	if err != nil {
		h.logoutFailed(c, err)
		return
	}
	sess, ok := h.currentSession(c)
	if !ok {
		return
	}
	if sess == nil {
		h.signedOut(c, p)
		return
	}
	h.render(c, http.StatusOK, h.pages.logout, map[string]any{"Title": "Sign out", "CSRF": h.csrfToken(c), "Next": p.Next, "ClientID": p.ClientID,
		"PostLogout": p.PostLogoutRedirectURI, "State": p.State})
}

// logoutConfirmed ends the session: the confirmation form, with its CSRF token.
func (h *Handler) logoutConfirmed(c *gin.Context) {
	if !h.csrfValid(c) {
		h.csrfFailed(c)
		return
	}
	// The form carries what the GET validated; it is checked again.
	p, err := h.rules.Logout.Check(c.Request.Context(), logout.Request{ClientID: c.PostForm("client_id"),
		PostLogoutRedirectURI: c.PostForm("post_logout_redirect_uri"), State: c.PostForm("state"), Next: c.PostForm("next")})
	if err != nil {
		h.logoutFailed(c, err)
		return
	}
	id, _ := h.cookie(c, sessionCookie)
	if err := h.rules.Logout.End(c.Request.Context(), id); err != nil {
		h.log.WarnContext(c.Request.Context(), "ending a session failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	h.signedOut(c, p)
}

// signedOut clears the session cookie and sends the browser where the
// rules say, or shows the signed-out page.
func (h *Handler) signedOut(c *gin.Context, p logout.Plan) {
	h.setCookie(c, sessionCookie, "", -1)
	if to := h.rules.Logout.Destination(c.Request.Context(), p); to != "" {
		h.redirect(c, to)
		return
	}
	h.message(c, http.StatusOK, "Signed out", "You are signed out", "", "You can close this page.")
}

// logoutFailed answers an error of the sign-out rules: a request an app got
// wrong is a 400 page, no redirect, the session untouched.
func (h *Handler) logoutFailed(c *gin.Context, err error) {
	var invalid *logout.InvalidError
	switch {
	case errors.As(err, &invalid) && invalid.AccessTokenHint:
		h.message(c, http.StatusBadRequest, "Invalid request", "Invalid sign-out request", "This sign-out link is not valid.", invalid.Why,
			"If an app sent you here, tell its developers. To sign out, close this page and use the app's or this site's Sign out.")
	case errors.As(err, &invalid):
		h.invalidRequest(c, invalid.Why)
	default:
		h.log.WarnContext(c.Request.Context(), "checking a sign-out failed", "error", err.Error())
		h.unavailable(c)
	}
}
