// Package webhookapi serves the webhook API: apps manage their subscriptions and deliveries under /api/v0/webhooks, and the resource services hand events in on the internal listener.
package webhookapi

import (
	"context"
	"errors"
	"log/slog"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// Paths of the public API.
const (
	PathSubscriptions = "/api/v0/webhooks"
	PathSubscription  = PathSubscriptions + "/:id"
	PathDeliveries    = PathSubscription + "/deliveries"
	PathReplay        = PathDeliveries + "/:deliveryId/replay"
	PathReplayDead    = PathSubscription + "/replay"
)

// ScopeManage is the scope of every public webhook route.
const ScopeManage = "webhook:manage"

// Handler serves the webhook API.
type Handler struct {
	Webhooks *webhook.Service
	// Tokens reads access tokens: signature against the published keys,
	// typ, iss, aud, exp.
	Tokens *accesstoken.Issuer
	// Denylist tells revoked access tokens.
	Denylist Denylist
	// Cursor signs the deliveries' page cursors.
	Cursor *cursor.Codec
	Log    *slog.Logger
}

// Denylist is the access-token denylist (refreshtoken.Denylist).
type Denylist interface {
	Revoked(ctx context.Context, jti, sid string) (bool, error)
}

// Register adds the public routes to public and the event intake to internal.
func (h *Handler) Register(public, internal gin.IRouter) {
	g := public.Group("", h.authenticate)
	g.POST(PathSubscriptions, h.create)
	g.GET(PathSubscriptions, h.list)
	g.GET(PathSubscription, h.get)
	g.PATCH(PathSubscription, h.update)
	g.DELETE(PathSubscription, h.delete)
	g.GET(PathDeliveries, h.deliveries)
	g.POST(PathReplay, h.replay)
	g.POST(PathReplayDead, h.replayDead)
	internal.POST(authapi.PathEvents, h.ingest)
}

const ownerKey = "webhookapi.owner"

// authenticate admits an app's own client-credentials access token
// carrying webhook:manage, checked here as the resource services check
// tokens (signature, typ, iss, aud, exp, revocation), and keeps the app's
// id as the owner of the request.
func (h *Handler) authenticate(c *gin.Context) {
	raw, ok := tokenauth.Bearer(c.GetHeader("Authorization"))
	if !ok {
		apierror.Abort(c, apierror.MissingToken())
		return
	}
	claims, err := h.Tokens.Read(raw)
	if err != nil {
		apierror.Abort(c, apierror.Unauthenticated(errors.Is(err, accesstoken.ErrExpired)))
		return
	}
	revoked, err := h.Denylist.Revoked(c.Request.Context(), claims.ID, claims.SessionID)
	if err != nil {
		h.Log.WarnContext(c.Request.Context(), "reading the access-token denylist failed", "error", err.Error())
		apierror.Abort(c, apierror.Unavailable("Token verification"))
		return
	}
	if revoked {
		apierror.Abort(c, apierror.Unauthenticated(false))
		return
	}
	c.Set(httpserver.LogClientIDKey, claims.ClientID)
	if !scope.Parse(claims.Scope).Contains(ScopeManage) {
		apierror.Abort(c, apierror.InsufficientScope(ScopeManage))
		return
	}
	owner, err := strconv.ParseInt(claims.ClientID, 10, 64)
	if err != nil || owner <= 0 || claims.Subject != accesstoken.ClientSubject(owner) {
		apierror.Abort(c, apierror.Forbidden("Only an app's own client-credentials token may manage its webhooks, not a token acting for a user."))
		return
	}
	c.Set(ownerKey, owner)
	c.Next()
}

func owner(c *gin.Context) int64 { return c.GetInt64(ownerKey) }

// fail answers the error the business returned.
func (h *Handler) fail(c *gin.Context, err error) {
	var invalid *webhook.InvalidError
	var scopeErr *webhook.ScopeError
	switch {
	case errors.As(err, &invalid):
		apierror.Abort(c, apierror.Validation(invalid.Message, invalid.Fields))
	case errors.As(err, &scopeErr):
		e := apierror.InsufficientScope(scopeErr.Scope)
		e.Message = "This app is not approved for the scope " + scopeErr.Scope + ", which the event " + scopeErr.Event + " needs."
		apierror.Abort(c, e)
	case errors.Is(err, webhook.ErrNotFound):
		apierror.Abort(c, apierror.NotFound("No such webhook subscription."))
	case errors.Is(err, webhook.ErrDeliveryNotFound):
		apierror.Abort(c, apierror.NotFound("No such delivery of this webhook subscription."))
	case errors.Is(err, webhook.ErrTooMany):
		apierror.Abort(c, apierror.Validation("This app already has "+strconv.Itoa(webhook.MaxSubscriptions)+
			" webhook subscriptions, the most allowed; delete one first.", nil))
	case errors.Is(err, webhook.ErrAppNotFound):
		apierror.Abort(c, apierror.Unauthenticated(false)) // the app was deleted since its token was issued
	default:
		apireply.Error(c, h.Log, err)
	}
}
