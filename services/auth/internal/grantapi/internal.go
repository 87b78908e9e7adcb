package grantapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/authapi"
)

// revocations serves the revocation feed to the resource services.
func (h *Handler) revocations(c *gin.Context) {
	after := int64(0)
	if raw := c.Query("after"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			apireply.Abort(c, apierror.Validation("after must be a non-negative integer.", nil))
			return
		}
		after = n
	}
	page, err := h.Grants.RevocationFeed(c.Request.Context(), after)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, page)
}

// userChanged is how users tells auth that a user's roles changed
// (grant.UserChanged).
func (h *Handler) userChanged(c *gin.Context) {
	userID, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || userID <= 0 {
		apireply.Abort(c, apierror.NotFound("No such user."))
		return
	}
	n, err := h.Grants.UserChanged(c.Request.Context(), userID)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, authapi.UserChanged{Revoked: n})
}
