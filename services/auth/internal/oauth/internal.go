package oauth

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/usersapi"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/refreshtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// standing returns what of scopes still stands for userID and cl (see
// scope.Set.Standing): invalid_grant when the user is gone or nothing is
// left, temporarily_unavailable when the users service cannot answer.
func (h *Handler) standing(ctx context.Context, cl client.Client, userID int64, scopes scope.Set) (scope.Set, *apierror.OAuthError) {
	perms, err := h.Users.Permissions(ctx, userID)
	if errors.Is(err, usersapi.ErrNotFound) {
		return nil, oauthErr(apierror.OAuthInvalidGrant, "The user of this grant no longer exists.")
	}
	if err != nil {
		h.Log.WarnContext(ctx, "reading a user's permissions failed", "error", err.Error())
		return nil, unavailable("The users service")
	}
	left := scopes.Standing(cl.Scopes, perms)
	if len(left) == 0 {
		return nil, oauthErr(apierror.OAuthInvalidGrant, "Nothing this grant authorized is still allowed: the user or the app lost every scope of it.")
	}
	return left, nil
}

// revocations serves the revocation feed to the resource services.
func (h *Handler) revocations(c *gin.Context) {
	after := int64(0)
	if raw := c.Query("after"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			apierror.Abort(c, apierror.Validation("after must be a non-negative integer.", nil))
			return
		}
		after = n
	}
	next, entries, more, err := h.Denylist.Feed(c.Request.Context(), after)
	if err != nil {
		h.Log.WarnContext(c.Request.Context(), "reading the revocation feed failed", "error", err.Error())
		apierror.Abort(c, apierror.Unavailable("The token store"))
		return
	}
	out := authapi.Revocations{Next: next, More: more, Revoked: entries}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, out)
}

// userChanged revokes the authorizations of a user that no longer stand:
// every one when the user is gone, else those holding a sensitive scope
// whose permission the user lost. Their access tokens stop at the
// resource services with the next poll of the feed.
func (h *Handler) userChanged(c *gin.Context) {
	ctx := c.Request.Context()
	userID, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || userID <= 0 {
		apierror.Abort(c, apierror.NotFound("No such user."))
		return
	}
	perms, err := h.Users.Permissions(ctx, userID)
	gone := errors.Is(err, usersapi.ErrNotFound)
	if err != nil && !gone {
		h.Log.WarnContext(ctx, "reading a user's permissions failed", "error", err.Error())
		apierror.Abort(c, apierror.Unavailable("The users service"))
		return
	}
	n, err := h.Refresh.RevokeUser(ctx, userID, func(f refreshtoken.Family) bool {
		return gone || len(f.Granted.Missing(perms)) > 0
	})
	if err != nil {
		h.Log.WarnContext(ctx, "revoking a user's authorizations failed", "error", err.Error())
		apierror.Abort(c, apierror.Unavailable("The token store"))
		return
	}
	if n > 0 {
		h.Log.InfoContext(ctx, "revoked authorizations after a permission change", "user_id", userID, "families", n)
	}
	c.JSON(http.StatusOK, authapi.UserChanged{Revoked: n})
}
