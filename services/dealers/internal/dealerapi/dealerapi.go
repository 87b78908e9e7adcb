// Package dealerapi serves the public dealers endpoint: the dealer search.
package dealerapi

import (
	"encoding/json"
	"log/slog"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/postal"
	"github.com/eventreg/eventreg/libs/searchapi"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
)

// Scope is what every dealers endpoint needs.
const Scope = "vendor:read"

// Handler serves the endpoints.
type Handler struct {
	svc   *dealer.Service
	pager page.Paginator
	reply apireply.Replier
	// protected is the middleware chain of a route that requires a scope.
	protected func(scope string) []gin.HandlerFunc
}

// New returns the handler; protected is the middleware chain of a route that
// requires a scope (token, scope, rate limit).
func New(svc *dealer.Service, pager page.Paginator, log *slog.Logger, protected func(scope string) []gin.HandlerFunc) *Handler {
	return &Handler{svc: svc, pager: pager, reply: apireply.Replier{Log: log}, protected: protected}
}

// Register adds the public route, behind the protected chain, to public;
// dealers has no internal API.
func (h *Handler) Register(public, _ gin.IRouter) {
	public.POST("/api/v0/dealers/search", append(h.protected(Scope), h.search)...)
}

func (h *Handler) search(c *gin.Context) {
	searchapi.RecordsOfUsers(c, h.pager, h.reply, h.svc.Search, toJSON)
}

// dealerJSON is a dealer as the API renders it.
type dealerJSON struct {
	ID    string  `json:"id"`
	Name  string  `json:"name"`
	Email *string `json:"email"`
	postal.Address
	User         usersclient.UserSummary `json:"user"`
	Options      json.RawMessage         `json:"options"` // []dealer.Option as stored
	Applications []applicationJSON       `json:"applications"`
}

// applicationJSON is an application as the API renders it.
type applicationJSON struct {
	ID                 string          `json:"id"`
	Status             string          `json:"status"`
	SpecialRequests    *string         `json:"specialRequests"`
	TableNumber        *string         `json:"tableNumber"`
	DealerRequestTypes json.RawMessage `json:"dealerRequestTypes"` // []dealer.Product as stored
	TableType          json.RawMessage `json:"tableType"`          // dealer.Product as stored
	DealerArea         areaJSON        `json:"dealerArea"`
	Options            json.RawMessage `json:"options"` // []dealer.Option as stored
}

type areaJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

var emptyArray = json.RawMessage(`[]`)

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return emptyArray
	}
	return raw
}

func toJSON(d dealer.WithUser) dealerJSON {
	out := dealerJSON{
		ID: strconv.FormatInt(d.ID, 10), Name: d.Name, Email: d.Email, Address: d.Address, User: d.User, Options: orEmpty(d.Options),
		Applications: make([]applicationJSON, len(d.Applications)),
	}
	for i, a := range d.Applications {
		out.Applications[i] = applicationJSON{
			ID: strconv.FormatInt(a.ID, 10), Status: a.Status, SpecialRequests: a.SpecialRequests, TableNumber: a.TableNumber,
			DealerRequestTypes: orEmpty(a.DealerRequestTypes), TableType: a.TableType,
			DealerArea: areaJSON{ID: strconv.FormatInt(a.AreaID, 10), Name: a.AreaName}, Options: orEmpty(a.Options),
		}
	}
	return out
}
