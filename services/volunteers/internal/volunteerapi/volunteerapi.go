// Package volunteerapi serves the public volunteers endpoints (search, a user's volunteer record, departments) and the internal volunteer status for the users service.
package volunteerapi

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/eventoption"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/searchapi"
	"github.com/eventreg/eventreg/libs/userid"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/volunteersclient"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// Scope is what every public volunteers endpoint needs.
const Scope = "volunteer:read"

// Handler serves the endpoints.
type Handler struct {
	svc   *volunteer.Service
	pager page.Paginator
	reply apireply.Replier
	// protected is the middleware chain of a route that requires a scope.
	protected func(scope string) []gin.HandlerFunc
}

// New returns the handler; protected is the middleware chain of a route that
// requires a scope (token, scope, rate limit).
func New(svc *volunteer.Service, pager page.Paginator, log *slog.Logger, protected func(scope string) []gin.HandlerFunc) *Handler {
	return &Handler{svc: svc, pager: pager, reply: apireply.Replier{Log: log, Rules: errorRules}, protected: protected}
}

// errorRules map the business errors to their responses; everything else
// takes the path every service shares (libs/apireply).
var errorRules = []apireply.Rule{
	apireply.Is(volunteer.ErrNotFound, func() *apierror.Error {
		return apierror.NotFound("The user has no volunteer record for this convention.")
	}),
}

// Register adds the public routes, behind the protected chain, to public
// and the internal route of libs/volunteersclient to internal.
func (h *Handler) Register(public, internal gin.IRouter) {
	protected := h.protected
	public.POST("/api/v0/volunteers/search", append(protected(Scope), h.search)...)
	public.GET("/api/v0/users/:id/volunteer", append(protected(Scope), h.get)...)
	public.GET("/api/v0/volunteers/departments", append(protected(Scope), h.departments)...)
	internal.GET(volunteersclient.PathStatus, h.status)
}

func (h *Handler) get(c *gin.Context) {
	apireply.UserRecord(c, h.reply, h.svc.Get, toJSON)
}

func (h *Handler) search(c *gin.Context) {
	searchapi.Records(c, h.pager, h.reply, h.svc.Search, toJSON)
}

func (h *Handler) departments(c *gin.Context) {
	deps, err := h.svc.Departments(c.Request.Context())
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	out := make([]departmentJSON, len(deps))
	for i, d := range deps {
		out[i] = departmentJSON{ID: strconv.FormatInt(d.ID, 10), Email: d.Email, Name: d.Name,
			PubliclyVisible: d.PubliclyVisible, Leads: d.LeadSummaries}
	}
	c.JSON(http.StatusOK, out)
}

// status answers the users service (libs/volunteersclient); an unknown user is
// neither a volunteer nor a lead.
func (h *Handler) status(c *gin.Context) {
	id, ok := userid.Parse(c.Param("id"))
	if !ok {
		apireply.Abort(c, apierror.Validation("The user id must be a positive whole number.", map[string]string{"id": "must be a positive whole number"}))
		return
	}
	st, err := h.svc.Status(c.Request.Context(), id)
	if err != nil {
		h.reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, volunteersclient.Status{IsVolunteer: st.IsVolunteer, IsDepartmentLead: st.IsDepartmentLead})
}

// volunteerJSON is a volunteer as the API renders it.
type volunteerJSON struct {
	CreatedAt      string                    `json:"createdAt"`
	UpdatedAt      string                    `json:"updatedAt"`
	ContactMethods []volunteer.ContactMethod `json:"contactMethods"`
	Departments    []assignmentJSON          `json:"departments"`
	User           usersclient.UserSummary   `json:"user"`
	Options        []eventoption.Option      `json:"options"`
}

type assignmentJSON struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	States []string `json:"states"`
}

type departmentJSON struct {
	ID              string                    `json:"id"`
	Email           string                    `json:"email"`
	Name            string                    `json:"name"`
	PubliclyVisible bool                      `json:"publiclyVisible"`
	Leads           []usersclient.UserSummary `json:"leads"`
}

func toJSON(v volunteer.WithUser) volunteerJSON {
	out := volunteerJSON{
		CreatedAt: v.CreatedAt.UTC().Format(apireply.TimeFormat), UpdatedAt: v.UpdatedAt.UTC().Format(apireply.TimeFormat),
		ContactMethods: v.ContactMethods, Departments: make([]assignmentJSON, len(v.Departments)),
		User: v.User, Options: v.Options,
	}
	if out.ContactMethods == nil {
		out.ContactMethods = []volunteer.ContactMethod{}
	}
	if out.Options == nil {
		out.Options = []eventoption.Option{}
	}
	for i, d := range v.Departments {
		states := d.States
		if states == nil {
			states = []string{}
		}
		out.Departments[i] = assignmentJSON{ID: strconv.FormatInt(d.DepartmentID, 10), Name: d.Name, States: states}
	}
	return out
}
