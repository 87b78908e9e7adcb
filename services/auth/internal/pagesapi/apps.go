package pagesapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

type appView struct {
	ID                        int64
	Name, Description, Scopes string
}

// appsLogin is the sign-in page that comes back to the apps page.
var appsLogin = PathLogin + "?next=" + url.QueryEscape("/oauth/apps")

// apps lists the apps the signed-in user authorized.
func (h *Handler) apps(c *gin.Context) {
	sess, ok := h.currentSession(c)
	if !ok {
		return
	}
	if sess == nil {
		c.Redirect(http.StatusFound, appsLogin)
		return
	}
	list, err := h.rules.Authorize.Apps(c.Request.Context(), sess.UserID)
	if err != nil {
		h.log.WarnContext(c.Request.Context(), "listing authorized apps failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	views := make([]appView, 0, len(list))
	for _, a := range list {
		var descs []string
		for _, n := range a.Scopes {
			if s, ok := scope.Lookup(n); ok {
				descs = append(descs, strings.ToLower(s.Description[:1])+s.Description[1:])
			}
		}
		views = append(views, appView{ID: a.ClientID, Name: a.ClientName, Description: a.ClientDescription, Scopes: strings.Join(descs, "; ")})
	}
	h.render(c, http.StatusOK, h.pages.apps, map[string]any{"Title": "Authorized apps", "Apps": views, "CSRF": h.csrfToken(c)})
}

// revokeApp withdraws the user's authorization of an app.
func (h *Handler) revokeApp(c *gin.Context) {
	sess, ok := h.formSession(c, appsLogin)
	if !ok {
		return
	}
	id, ok := client.ParseID(c.PostForm("client_id"))
	if !ok {
		h.message(c, http.StatusBadRequest, "Invalid request", "Invalid request", "No app was named.")
		return
	}
	if err := h.rules.Authorize.RevokeApp(c.Request.Context(), sess.UserID, id); err != nil {
		h.log.WarnContext(c.Request.Context(), "revoking an app failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	c.Redirect(http.StatusSeeOther, "/oauth/apps")
}
