// Package registrationapi serves the public registrations endpoints: a user's registration and the registration search.
package registrationapi

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/searchapi"
	"github.com/eventreg/eventreg/libs/userid"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// Scope is what every registrations endpoint needs.
const Scope = "registration:read"

// Scopes of the routes a user's own token may call (decision 0097).
const (
	// SelfScope lets an OBO token read its own user's registration.
	SelfScope = "con:read"
	// OrdersScope (service) reads any user's orders; OwnOrdersScope (OBO)
	// the token's own user's.
	OrdersScope    = "order:view"
	OwnOrdersScope = "pii:finance:read"
)

// Chains are the middleware chains of the routes (service.ResourceDeps):
// token, scope, then the client's rate limit.
type Chains interface {
	ProtectedAndLimited(scope string) []gin.HandlerFunc
	// ProtectedOrSelfAndLimited also lets an OBO token with selfScope call
	// the route for its own user (the path parameter param).
	ProtectedOrSelfAndLimited(scope, selfScope, param string) []gin.HandlerFunc
}

// Handler serves the endpoints.
type Handler struct {
	svc    *registration.Service
	pager  page.Paginator
	reply  apireply.Replier
	chains Chains
}

// New returns the handler; chains build each route's middleware.
func New(svc *registration.Service, pager page.Paginator, log *slog.Logger, chains Chains) *Handler {
	return &Handler{svc: svc, pager: pager, reply: apireply.Replier{Log: log, Rules: errorRules}, chains: chains}
}

// errorRules map the business errors to their responses; everything else
// takes the path every service shares (libs/apireply).
var errorRules = []apireply.Rule{
	apireply.Is(registration.ErrNotFound, func() *apierror.Error { return apierror.NotFound("The user has no registration for this convention.") }),
}

// Register adds the public routes, behind the protected chain, to public;
// registrations has no internal API.
func (h *Handler) Register(public, _ gin.IRouter) {
	public.GET("/api/v0/users/:id/registration", append(h.chains.ProtectedOrSelfAndLimited(Scope, SelfScope, "id"), h.get)...)
	public.GET("/api/v0/users/:id/orders", append(h.chains.ProtectedOrSelfAndLimited(OrdersScope, OwnOrdersScope, "id"), h.orders)...)
	public.POST("/api/v0/registration/search", append(h.chains.ProtectedAndLimited(Scope), h.search)...)
}

func (h *Handler) get(c *gin.Context) {
	apireply.UserRecord(c, h.reply, h.svc.Get, toJSON)
}

// orders serves GET /api/v0/users/:id/orders: {"data": [Order]}, oldest
// first, empty when the user has none.
func (h *Handler) orders(c *gin.Context) {
	id, ok := userid.Parse(c.Param("id"))
	if !ok {
		apireply.Abort(c, apierror.NotFound("No such user."))
		return
	}
	orders, err := h.svc.Orders(c.Request.Context(), id)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	out := make([]orderViewJSON, len(orders))
	for i, o := range orders {
		out[i] = toOrderJSON(o)
	}
	c.JSON(http.StatusOK, gin.H{"data": out})
}

func (h *Handler) search(c *gin.Context) {
	searchapi.RecordsOfUsers(c, h.pager, h.reply, h.svc.Search, toJSON)
}

// registrationJSON is a registration as the API renders it.
type registrationJSON struct {
	CreatedAt          string                  `json:"createdAt"`
	UpdatedAt          string                  `json:"updatedAt"`
	BadgeName          string                  `json:"badgeName"`
	Status             string                  `json:"status"`
	ProductName        string                  `json:"productName"`
	ProductDisplayName *string                 `json:"productDisplayName"`
	ProductID          string                  `json:"productId"`
	Options            json.RawMessage         `json:"options"` // []eventoption.Option as stored
	Flags              json.RawMessage         `json:"flags"`   // []registration.Flag as stored
	User               usersclient.UserSummary `json:"user"`
	Order              *orderJSON              `json:"order"`
}

type orderJSON struct {
	OrderID string `json:"orderId"`
}

var emptyArray = json.RawMessage(`[]`)

func toJSON(r registration.WithUser) registrationJSON {
	out := registrationJSON{
		CreatedAt: r.CreatedAt.UTC().Format(apireply.TimeFormat), UpdatedAt: r.UpdatedAt.UTC().Format(apireply.TimeFormat),
		BadgeName: r.BadgeName, Status: r.Status, ProductName: r.ProductName, ProductDisplayName: r.ProductDisplayName,
		ProductID: r.ProductID, Options: r.Options, Flags: r.Flags, User: r.User,
	}
	if len(out.Options) == 0 {
		out.Options = emptyArray
	}
	if len(out.Flags) == 0 {
		out.Flags = emptyArray
	}
	if r.OrderID != nil {
		out.Order = &orderJSON{OrderID: *r.OrderID}
	}
	return out
}
