package userapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/jsonbody"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/services/users/internal/role"
)

// listRoles serves GET /api/v0/roles?limit=&nextPage=.
func (h *Handler) listRoles(c *gin.Context) {
	limit, e := page.ParseLimit(c.Query("limit"))
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	next := c.Query("nextPage")
	ks, e := h.rolePages.Start(&next, limit, nil)
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	roles, err := h.Roles.List(c.Request.Context(), ks)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	views := make([]roleView, len(roles))
	for i, r := range roles {
		views[i] = roleView{ID: strconv.FormatInt(r.ID, 10), Name: r.Name}
	}
	c.JSON(http.StatusOK, page.Finish(h.rolePages, ks, views, func(v roleView) int64 {
		n, _ := strconv.ParseInt(v.ID, 10, 64)
		return n
	}, nil))
}

// userRoles serves GET /api/v0/users/:userId/roles.
func (h *Handler) userRoles(c *gin.Context) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		apireply.Abort(c, badID("userId"))
		return
	}
	held, err := h.Roles.Held(c.Request.Context(), id)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	views := make([]userRoleView, len(held))
	for i, r := range held {
		views[i] = userRoleView{ID: strconv.FormatInt(r.Role.ID, 10), Name: r.Role.Name, Scope: string(r.Scope)}
	}
	c.JSON(http.StatusOK, gin.H{"data": views})
}

func membershipIDs(c *gin.Context) (userID, roleID int64, ok bool) {
	if userID, ok = parseID(c.Param("id")); !ok {
		apireply.Abort(c, badID("userId"))
		return 0, 0, false
	}
	if roleID, ok = parseID(c.Param("roleId")); !ok {
		apireply.Abort(c, badID("roleId"))
		return 0, 0, false
	}
	return userID, roleID, true
}

// grantRole serves PUT /api/v0/users/:userId/roles/:roleId; a role apps may
// not grant (role.AppsMayGrant) is a 403.
func (h *Handler) grantRole(c *gin.Context) {
	userID, roleID, ok := membershipIDs(c)
	if !ok {
		return
	}
	var body struct {
		Scope *string `json:"scope"`
	}
	if e := jsonbody.Decode(c, &body, jsonbody.Options{}); e != nil {
		apireply.Abort(c, e)
		return
	}
	if body.Scope == nil {
		apireply.Abort(c, apierror.Validation("scope is required: global or convention.", map[string]string{"scope": "is required: global or convention"}))
		return
	}
	scope, ok := role.ParseScope(*body.Scope)
	if !ok {
		apireply.Abort(c, apierror.Validation("scope must be global or convention.", map[string]string{"scope": "must be global or convention"}))
		return
	}
	if err := h.Roles.GrantByApp(c.Request.Context(), userID, roleID, scope); err != nil {
		h.reply.Error(c, err)
		return
	}
	h.Metrics.roleChanged("granted")
	c.Status(http.StatusNoContent)
}

// revokeRole serves DELETE /api/v0/users/:userId/roles/:roleId, with
// grantRole's ceiling.
func (h *Handler) revokeRole(c *gin.Context) {
	userID, roleID, ok := membershipIDs(c)
	if !ok {
		return
	}
	if err := h.Roles.RevokeByApp(c.Request.Context(), userID, roleID); err != nil {
		h.reply.Error(c, err)
		return
	}
	h.Metrics.roleChanged("revoked")
	c.Status(http.StatusNoContent)
}
