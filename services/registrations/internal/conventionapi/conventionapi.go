// Package conventionapi serves the public configuration, GET /api/config: the organization and its conventions, without a token.
package conventionapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/services/registrations/internal/convention"
)

// Path is the public configuration's route.
const Path = "/api/config"

// Handler serves the endpoint.
type Handler struct {
	svc   *convention.Service
	reply apireply.Replier
	// public is the middleware chain of a route that needs no token (the
	// per-address rate limit).
	public []gin.HandlerFunc
}

// New returns the handler; public is the chain of a route without a token
// (service.ResourceDeps.Public).
func New(svc *convention.Service, log *slog.Logger, public []gin.HandlerFunc) *Handler {
	return &Handler{svc: svc, reply: apireply.Replier{Log: log, Rules: errorRules}, public: public}
}

var errorRules = []apireply.Rule{
	apireply.Is(convention.ErrNotConfigured, func() *apierror.Error {
		return apierror.NotFound("The organization has not been configured yet.")
	}),
}

// Register adds the public route; there is no internal one.
func (h *Handler) Register(public, _ gin.IRouter) {
	public.GET(Path, append(h.public, h.get)...)
}

// get serves GET /api/config. No token is read: a bearer sent with it, even
// an invalid one, changes nothing (decision 0097).
func (h *Handler) get(c *gin.Context) {
	cfg, err := h.svc.Get(c.Request.Context())
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	// Caches and browsers may keep it as long as a replica does.
	c.Header("Cache-Control", "public, max-age=10")
	c.JSON(http.StatusOK, toJSON(cfg))
}

type configJSON struct {
	Organization organizationJSON `json:"organization"`
	Conventions  []conventionJSON `json:"conventions"`
}

type organizationJSON struct {
	Name    string `json:"name"`
	Country string `json:"country"`
}

type conventionJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	LongName string `json:"longName"`
	Domain   string `json:"domain"`
	StartAt  string `json:"startAt"`
	EndAt    string `json:"endAt"`
	TimeZone string `json:"timeZone"`
	Venue    string `json:"venue"`
}

func toJSON(c convention.Config) configJSON {
	out := configJSON{Organization: organizationJSON{Name: c.Organization.Name, Country: c.Organization.Country},
		Conventions: make([]conventionJSON, 0, len(c.Conventions))}
	for _, v := range c.Conventions {
		out.Conventions = append(out.Conventions, conventionJSON{ID: v.ID, Name: v.Name, LongName: v.LongName, Domain: v.Domain,
			StartAt: v.Shown(v.StartAt).Format(time.RFC3339), EndAt: v.Shown(v.EndAt).Format(time.RFC3339),
			TimeZone: v.TimeZone, Venue: v.Venue})
	}
	return out
}
