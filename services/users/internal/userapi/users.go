package userapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/jsonbody"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/svcclient"
	"github.com/eventreg/eventreg/libs/tokenauth"
	"github.com/eventreg/eventreg/libs/volunteersclient"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// currentUser serves GET /api/users/:id for OBO tokens: :id is "current" or
// the caller's own id.
func (h *Handler) currentUser(c *gin.Context) {
	claims := tokenauth.FromContext(c)
	if claims.UserID == 0 {
		apireply.Abort(c, apierror.Forbidden("This endpoint needs a token issued on behalf of a user."))
		return
	}
	if p := c.Param("id"); p != "current" {
		id, ok := parseID(p)
		if !ok {
			apireply.Abort(c, apierror.Validation("The id in the path must be current or a positive whole number.",
				map[string]string{"id": "must be current or a positive whole number"}))
			return
		}
		if id != claims.UserID {
			apireply.Abort(c, apierror.Forbidden("A token may read only its own user; use current."))
			return
		}
	}
	ctx := c.Request.Context()
	var (
		u    user.User
		held []role.Held
		vs   volunteersclient.Status
	)
	// The three sources are independent: ask them at once.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { u, err = h.Users.Get(gctx, claims.UserID); return err })
	g.Go(func() (err error) { held, err = h.Roles.Held(gctx, claims.UserID); return err })
	g.Go(func() (err error) {
		vs, err = h.Volunteers.Status(gctx, claims.UserID)
		if err != nil && !errors.Is(err, svcclient.ErrUnavailable) {
			// Any answer but a status (a 4xx included) leaves the two flags
			// unknown: never guess them.
			err = &svcclient.UnavailableError{Service: "volunteers", Err: err}
		}
		return err
	})
	if err := g.Wait(); err != nil {
		h.reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, currentUserView(u, held, vs.IsVolunteer, vs.IsDepartmentLead, claims.HasScope))
}

// getUser serves GET /api/v0/users/:id.
func (h *Handler) getUser(c *gin.Context) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		apireply.Abort(c, badID("id"))
		return
	}
	u, err := h.Users.Get(c.Request.Context(), id)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, toUserView(u))
}

type searchRequest struct {
	page.Request
	Filter *struct {
		RoleID *json.RawMessage `json:"roleId"`
		Email  *string          `json:"email"`
	} `json:"filter"`
}

// searchUsers serves POST /api/v0/users/search.
func (h *Handler) searchUsers(c *gin.Context) {
	var req searchRequest
	limit, ok := jsonbody.DecodeSearch(c, &req)
	if !ok {
		return
	}
	var f user.Filter
	if req.Filter != nil {
		if req.Filter.RoleID != nil && string(*req.Filter.RoleID) != "null" {
			id, ok := parseRoleID(*req.Filter.RoleID)
			if !ok {
				apireply.Abort(c, apierror.Validation("filter.roleId must be a role id: a positive whole number or a string of digits.",
					map[string]string{"filter.roleId": "must be a positive whole number or a string of digits"}))
				return
			}
			f.RoleID = id
		}
		if req.Filter.Email != nil {
			if strings.TrimSpace(*req.Filter.Email) == "" {
				apireply.Abort(c, apierror.Validation("filter.email must not be empty.", map[string]string{"filter.email": "must not be empty"}))
				return
			}
			if strings.ContainsRune(*req.Filter.Email, 0) { // PostgreSQL text cannot hold NUL: it would be a 500
				apireply.Abort(c, apierror.Validation("filter.email must not contain NUL characters.", map[string]string{"filter.email": "must not contain NUL characters"}))
				return
			}
			// Canonical (lower-cased) so that a cursor is bound to the match, not the spelling.
			f.Email = strings.ToLower(*req.Filter.Email)
		}
	}
	ks, e := h.searchPages.Start(req.NextPage, limit, f)
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	users, err := h.Users.Search(c.Request.Context(), f, ks)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	views := make([]userView, len(users))
	for i, u := range users {
		views[i] = toUserView(u)
	}
	c.JSON(http.StatusOK, page.Finish(h.searchPages, ks, views, func(v userView) int64 {
		n, _ := strconv.ParseInt(v.ID, 10, 64)
		return n
	}, f))
}

// parseRoleID reads a role id given as a JSON number or a string of digits.
func parseRoleID(raw json.RawMessage) (int64, bool) {
	s := strings.TrimSpace(string(raw))
	if unq, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		s = unq
	}
	return parseID(s)
}
