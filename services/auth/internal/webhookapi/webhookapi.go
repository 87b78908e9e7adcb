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
	// PathKey serves the webhook signing key as PEM, public, where the
	// real API serves it (no version segment).
	PathKey = "/api/webhooks/key"
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
	// SignOut signs a user out everywhere (grant.Service.SignOut): what an
	// authapi.EventUserSignedOut event received asks for.
	SignOut func(ctx context.Context, userID int64) error
	Log     *slog.Logger
	reply   apireply.Replier
}

// New returns the handler of webhooks; tokens, denylist and codec check the
// apps' tokens and sign the deliveries' page cursors.
func New(webhooks *webhook.Service, tokens *accesstoken.Issuer, denylist Denylist, codec *cursor.Codec, log *slog.Logger) *Handler {
	return &Handler{Webhooks: webhooks, Tokens: tokens, Denylist: denylist, Cursor: codec, Log: log,
		reply: apireply.Replier{Log: log, Rules: errorRules}}
}

// Denylist is the access-token denylist (refreshdb.Denylist).
type Denylist interface {
	Revoked(ctx context.Context, c accesstoken.Claims) (bool, error)
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
		apireply.Abort(c, apierror.MissingToken())
		return
	}
	claims, err := h.Tokens.Read(raw)
	if err != nil {
		apireply.Abort(c, apierror.Unauthenticated(errors.Is(err, accesstoken.ErrExpired)))
		return
	}
	revoked, err := h.Denylist.Revoked(c.Request.Context(), claims)
	if err != nil {
		h.fail(c, apierror.DependencyFailed("Token verification", err))
		return
	}
	if revoked {
		apireply.Abort(c, apierror.Unauthenticated(false))
		return
	}
	c.Set(httpserver.LogClientIDKey, claims.ClientID)
	if !scope.Parse(claims.Scope).Contains(ScopeManage) {
		apireply.Abort(c, apierror.InsufficientScope(ScopeManage))
		return
	}
	owner, err := strconv.ParseInt(claims.ClientID, 10, 64)
	if err != nil || owner <= 0 || claims.Subject != accesstoken.ClientSubject(owner) {
		apireply.Abort(c, apierror.Forbidden("Only an app's own client-credentials token may manage its webhooks, not a token acting for a user."))
		return
	}
	c.Set(ownerKey, owner)
	c.Next()
}

func owner(c *gin.Context) int64 { return c.GetInt64(ownerKey) }

// errorRules map the business errors of webhook to their responses;
// everything else takes the path every service shares (libs/apireply).
var errorRules = []apireply.Rule{
	apireply.As(func(e *webhook.InvalidError) *apierror.Error { return apierror.Validation(e.Message, e.Fields) }),
	apireply.As(func(e *webhook.ScopeError) *apierror.Error {
		r := apierror.InsufficientScope(e.Scope)
		r.Message = "This app is not approved for the scope " + e.Scope + ", which the event " + e.Event + " needs."
		return r
	}),
	apireply.Is(webhook.ErrNotFound, func() *apierror.Error { return apierror.NotFound("No such webhook subscription.") }),
	apireply.Is(webhook.ErrDeliveryNotFound, func() *apierror.Error {
		return apierror.NotFound("No such delivery of this webhook subscription.")
	}),
	apireply.Is(webhook.ErrTooMany, func() *apierror.Error {
		return apierror.Validation("This app already has "+strconv.Itoa(webhook.MaxSubscriptions)+
			" webhook subscriptions, the most allowed; delete one first.", nil)
	}),
	apireply.Is(webhook.ErrOperatorDisabled, func() *apierror.Error {
		return apierror.Forbidden("An operator disabled this webhook subscription; only an operator can enable it again.")
	}),
	// The app was deleted since its token was issued.
	apireply.Is(webhook.ErrAppNotFound, func() *apierror.Error { return apierror.Unauthenticated(false) }),
}

// fail answers the error the business returned.
func (h *Handler) fail(c *gin.Context, err error) {
	h.reply.Error(c, err)
}
