package browser

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/client"
)

// TokenHints reads the access token an app sends to the logout as a hint
// of the session to end (accesstoken.Issuer).
type TokenHints interface {
	ReadHint(raw string) (accesstoken.Claims, error)
}

// logoutClient checks the access_token hint of a logout request, as apps
// written for the real API send it (GET /oauth/logout?client_id=&access_token=&next=),
// and returns the client whose redirect URIs next may be: clientID, or the
// token's app when clientID is absent. The hint must be an access token this
// server signed, of clientID's app when both are given; otherwise the
// answer is a 400 page, nothing ended, and ok is false. Beyond that the hint
// decides nothing: whose token it is never changes the page, so it neither
// signs anyone out nor tells the app who is signed in (decision 0099).
func (h *Handler) logoutClient(c *gin.Context, clientID string) (string, bool) {
	raw := c.Query("access_token")
	if raw == "" {
		return clientID, true
	}
	hint, err := h.Hints.ReadHint(raw)
	if err != nil {
		h.badLogout(c, "Its access_token is not an access token of this server.")
		return "", false
	}
	if clientID == "" {
		return hint.ClientID, true
	}
	if id, ok := client.ParseID(clientID); !ok || strconv.FormatInt(id, 10) != hint.ClientID {
		h.badLogout(c, "Its access_token was issued to another app than its client_id.")
		return "", false
	}
	return clientID, true
}

// badLogout is the page of a logout request an app got wrong: 400, no
// redirect, the session untouched.
func (h *Handler) badLogout(c *gin.Context, why string) {
	h.message(c, http.StatusBadRequest, "Invalid request", "Invalid sign-out request", "This sign-out link is not valid.", why,
		"If an app sent you here, tell its developers. To sign out, close this page and use the app's or this site's Sign out.")
}
