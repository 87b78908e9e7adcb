// Package registrationapi serves the public registrations endpoints: a user's registration and the registration search.
package registrationapi

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/jsonbody"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/userid"
	"github.com/eventreg/eventreg/libs/usersapi"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// Scope is what every registrations endpoint needs.
const Scope = "registration:read"

// MaxFilterUserIDs is the most ids filter.userIds takes.
const MaxFilterUserIDs = 100

// Handler serves the endpoints.
type Handler struct {
	svc   *registration.Service
	pager page.Paginator
	reply apireply.Replier
	// protected is the middleware chain of a route that requires a scope.
	protected func(scope string) []gin.HandlerFunc
}

// New returns the handler; protected is the middleware chain of a route that
// requires a scope (token, scope, rate limit).
func New(svc *registration.Service, pager page.Paginator, log *slog.Logger, protected func(scope string) []gin.HandlerFunc) *Handler {
	return &Handler{svc: svc, pager: pager, reply: apireply.Replier{Log: log, Rules: errorRules}, protected: protected}
}

// errorRules map the business errors to their responses; everything else
// takes the path every service shares (libs/apireply).
var errorRules = []apireply.Rule{
	apireply.Is(registration.ErrNotFound, func() *apierror.Error { return apierror.NotFound("The user has no registration for this convention.") }),
}

// Register adds the public routes, behind the protected chain, to public;
// registrations has no internal API.
func (h *Handler) Register(public, _ gin.IRouter) {
	public.GET("/api/v0/users/:id/registration", append(h.protected(Scope), h.get)...)
	public.POST("/api/v0/registration/search", append(h.protected(Scope), h.search)...)
}

func (h *Handler) get(c *gin.Context) {
	apireply.UserRecord(c, h.reply, h.svc.Get, toJSON)
}

type searchRequest struct {
	page.Request
	Filter *struct {
		UserIDs json.RawMessage `json:"userIds"`
	} `json:"filter"`
}

// cursorFilter binds a cursor to the filter it was issued for.
type cursorFilter struct {
	UserIDs []int64 `json:"u"`
}

func (h *Handler) search(c *gin.Context) {
	var req searchRequest
	limit, ok := jsonbody.DecodeSearch(c, &req)
	if !ok {
		return
	}
	var f registration.Filter
	if req.Filter != nil {
		ids, err := userid.ParseList(req.Filter.UserIDs, MaxFilterUserIDs)
		if err != nil {
			apireply.Abort(c, apierror.Validation("filter.userIds "+err.Error()+".", map[string]string{"filter.userIds": err.Error()}))
			return
		}
		f.UserIDs = ids
	}
	var cf any
	if f.UserIDs != nil {
		cf = cursorFilter{UserIDs: f.UserIDs}
	}
	ks, e := h.pager.Start(req.NextPage, limit, cf)
	if e != nil {
		apireply.Abort(c, e)
		return
	}
	p, err := h.svc.Search(c.Request.Context(), f, ks)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, page.Render(h.pager, p.Items, p.Last, p.More, cf, toJSON))
}

// registrationJSON is a registration as the API renders it.
type registrationJSON struct {
	CreatedAt          string               `json:"createdAt"`
	UpdatedAt          string               `json:"updatedAt"`
	BadgeName          string               `json:"badgeName"`
	Status             string               `json:"status"`
	ProductName        string               `json:"productName"`
	ProductDisplayName *string              `json:"productDisplayName"`
	ProductID          string               `json:"productId"`
	Options            json.RawMessage      `json:"options"` // []eventoption.Option as stored
	Flags              json.RawMessage      `json:"flags"`   // []registration.Flag as stored
	User               usersapi.UserSummary `json:"user"`
	Order              *orderJSON           `json:"order"`
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
