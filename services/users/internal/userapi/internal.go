package userapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/jsonbody"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// summaries serves POST /internal/users/summaries: {"ids": [...]} (at most
// 100) → {"data": [UserSummary]}, unknown ids left out.
func (h *Handler) summaries(c *gin.Context) {
	var req usersclient.SummariesRequest
	if e := jsonbody.Decode(c, &req, jsonbody.Options{}); e != nil {
		apireply.Abort(c, e)
		return
	}
	if len(req.IDs) > usersclient.MaxSummaryIDs {
		apireply.Abort(c, apierror.Validation("At most 100 ids per call.", map[string]string{"ids": "at most 100"}))
		return
	}
	for _, id := range req.IDs {
		if id <= 0 {
			apireply.Abort(c, apierror.Validation("ids must be positive.", map[string]string{"ids": "must be positive whole numbers"}))
			return
		}
	}
	users, err := h.Users.Summaries(c.Request.Context(), req.IDs)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	out := usersclient.SummariesResponse{Data: make([]usersclient.UserSummary, len(users))}
	for i, u := range users {
		out.Data[i] = toSummary(u)
	}
	c.JSON(http.StatusOK, out)
}

// verify serves POST /internal/credentials/verify: a username or email and a
// password → {"userId"} or 401.
func (h *Handler) verify(c *gin.Context) {
	var req usersclient.VerifyRequest
	if e := jsonbody.Decode(c, &req, jsonbody.Options{}); e != nil {
		apireply.Abort(c, e)
		return
	}
	id, err := h.Users.Verify(c.Request.Context(), req.Username, req.Password)
	if errors.Is(err, user.ErrBadCredentials) {
		c.Header(usersclient.AnswerHeader, usersclient.AnswerBadCredentials)
		apireply.Abort(c, &apierror.Error{Status: http.StatusUnauthorized, Category: apierror.CategoryAuthentication,
			Message: "The username or password is wrong."})
		return
	}
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, usersclient.VerifyResponse{UserID: id})
}

// account serves POST /internal/credentials/account: a username or email
// → {"userId"} of the account it names, or 404.
func (h *Handler) account(c *gin.Context) {
	var req usersclient.AccountRequest
	if e := jsonbody.Decode(c, &req, jsonbody.Options{}); e != nil {
		apireply.Abort(c, e)
		return
	}
	id, err := h.Users.Account(c.Request.Context(), req.Username)
	if errors.Is(err, user.ErrNotFound) {
		c.Header(usersclient.AnswerHeader, usersclient.AnswerNoSuchUser)
	}
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, usersclient.AccountResponse{UserID: id})
}

// permissions serves GET /internal/users/:id/permissions.
func (h *Handler) permissions(c *gin.Context) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		apireply.Abort(c, badID("id"))
		return
	}
	perms, err := h.Roles.Permissions(c.Request.Context(), id)
	if errors.Is(err, role.ErrUserNotFound) {
		c.Header(usersclient.AnswerHeader, usersclient.AnswerNoSuchUser)
	}
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, usersclient.PermissionsResponse{UserID: id, Permissions: perms})
}
