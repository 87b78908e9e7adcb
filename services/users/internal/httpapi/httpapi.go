// Package httpapi is the HTTP layer of the users service: the public API
// routed by the gateway and the internal API (libs/usersapi) for the other
// services, both rendering errors with libs/apierror.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/svcclient"
	"github.com/eventreg/eventreg/libs/userid"
	"github.com/eventreg/eventreg/libs/usersapi"
	"github.com/eventreg/eventreg/libs/volunteersapi"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// Scopes the routes need.
const (
	ScopeProfile     = "pii:basic"
	ScopeAddress     = "pii:address"
	ScopeEmail       = "pii:email"
	ScopePhone       = "pii:phone"
	ScopeUserRead    = "user:read"
	ScopeRolesUpdate = "user:roles:update"
)

// RequestTimeout bounds the database work of one request: past it the answer
// is a 503, well within the 5 s real clients wait.
const RequestTimeout = 3 * time.Second

// VolunteerStatus is what the current-user view needs from the volunteers
// service (volunteersapi.Client).
type VolunteerStatus interface {
	Status(ctx context.Context, userID int64) (volunteersapi.Status, error)
}

// Deps are the handlers' dependencies.
type Deps struct {
	Log        *slog.Logger
	Users      *user.Core
	Roles      *role.Core
	Volunteers VolunteerStatus
	Cursor     *cursor.Codec
	// Protected returns the middleware of a route needing a scope
	// (service.ResourceDeps.Protected).
	Protected func(scope string) []gin.HandlerFunc
	// RateLimit runs after the token checks of the public routes
	// (libs/ratelimit); nil for none.
	RateLimit gin.HandlerFunc
	// Metrics counts role changes (NewMetrics; nil: not counted).
	Metrics *Metrics
	// Owners serve the sub-resources other services own under /api/v0/users
	// (forward.Proxy): the gateway routes all of /api/v0/users here.
	Owners Owners
}

// Owners are the services that own a sub-resource of a user, each reached
// through a handler that forwards the request as it came (decision 0085).
// The owner checks the token and scope itself. A nil handler is not routed.
type Owners struct {
	Volunteer    http.Handler // /api/v0/users/:id/volunteer: the volunteers service
	Registration http.Handler // /api/v0/users/:id/registration: the registrations service
}

type handlers struct {
	Deps
	searchPages page.Paginator
	rolePages   page.Paginator
}

// Register adds the public routes to public and the internal ones to internal.
func Register(public, internal *gin.Engine, d Deps) {
	h := &handlers{Deps: d,
		searchPages: page.Paginator{Codec: d.Cursor, Query: "users.search"},
		rolePages:   page.Paginator{Codec: d.Cursor, Query: "roles.list"},
	}
	public.GET("/", rootPage)
	public.HEAD("/", rootPage)
	public.GET("/api/docs", apispec.Handler())
	public.HEAD("/api/docs", apispec.Handler())

	api := public.Group("/", withDeadline(RequestTimeout))
	api.GET("/api/users/:id", h.with(ScopeProfile, h.currentUser)...)
	api.GET("/api/v0/users/:id", h.with(ScopeUserRead, h.getUser)...)
	api.POST("/api/v0/users/search", h.with(ScopeUserRead, h.searchUsers)...)
	api.GET("/api/v0/roles", h.with(ScopeUserRead, h.listRoles)...)
	// gin needs one name per path segment: :id is the contract's :userId.
	api.GET("/api/v0/users/:id/roles", h.with(ScopeUserRead, h.userRoles)...)
	api.PUT("/api/v0/users/:id/roles/:roleId", h.with(ScopeRolesUpdate, h.grantRole)...)
	api.DELETE("/api/v0/users/:id/roles/:roleId", h.with(ScopeRolesUpdate, h.revokeRole)...)
	// Every method, so that the owner answers exactly as when the gateway
	// routed these paths to it (its 405s included); no deadline, token check
	// or rate limit of users' own: the owner applies its own.
	for path, owner := range map[string]http.Handler{
		"/api/v0/users/:id/volunteer":    d.Owners.Volunteer,
		"/api/v0/users/:id/registration": d.Owners.Registration,
	} {
		if owner != nil {
			public.Any(path, gin.WrapH(owner))
		}
	}

	in := internal.Group("/", withDeadline(RequestTimeout))
	in.POST(usersapi.PathSummaries, h.summaries)
	in.POST(usersapi.PathVerify, h.verify)
	in.GET(usersapi.PathPermissions, h.permissions)
}

func (h *handlers) with(scope string, f gin.HandlerFunc) []gin.HandlerFunc {
	chain := h.Protected(scope)
	if h.RateLimit != nil {
		chain = append(chain, h.RateLimit)
	}
	return append(chain, f)
}

func withDeadline(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

const rootHTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Event registration API</title></head>
<body>
<h1>Event registration API</h1>
<p>Users, roles, volunteers and registrations of the organization, for applications.</p>
<p>The API document: <a href="/api/docs">/api/docs</a> (<a href="/api/docs?format=yaml">YAML</a>).
Server metadata: <a href="/.well-known/oauth-authorization-server">/.well-known/oauth-authorization-server</a>.</p>
</body>
</html>
`

func rootPage(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "text/html; charset=utf-8", []byte(rootHTML))
}

// parseID reads a positive decimal id (no sign, no spaces); role ids follow
// the rule of user ids.
func parseID(s string) (int64, bool) { return userid.Parse(s) }

func badID(field string) *apierror.Error {
	return apierror.Validation("The "+field+" in the path must be a positive whole number.",
		map[string]string{field: "must be a positive whole number"})
}

// fail answers err: domain errors by their status, an unreachable database
// or service with 503, anything else with 500 and a hash that ties the body
// to the log line (libs/apireply).
func (h *handlers) fail(c *gin.Context, err error) {
	switch {
	case errors.Is(err, user.ErrNotFound), errors.Is(err, role.ErrUserNotFound):
		apierror.Abort(c, apierror.NotFound("No such user."))
	case errors.Is(err, role.ErrRoleNotFound):
		apierror.Abort(c, apierror.NotFound("No such role."))
	case errors.Is(err, role.ErrNotHeld):
		apierror.Abort(c, apierror.NotFound("The user does not have this role."))
	case errors.Is(err, role.ErrAlreadyHeld):
		apierror.Abort(c, apierror.Conflict(apierror.CodeUserWasAlreadyAdded, "UserWasAlreadyAdded: the user already has this role."))
	case errors.Is(err, password.ErrBusy):
		// Every password slot stayed taken until the request's deadline: a
		// login burst beyond what this replica's cores hash (decision 0080).
		h.Log.WarnContext(c.Request.Context(), "password checks saturated", "route", c.FullPath())
		apierror.Abort(c, apierror.Unavailable("Password checking"))
	case errors.Is(err, svcclient.ErrUnavailable):
		h.Log.WarnContext(c.Request.Context(), "dependency unavailable", "route", c.FullPath(), "error", err.Error())
		apierror.Abort(c, apierror.Unavailable("The volunteers service"))
	default:
		// An unreachable database is a 503, anything else a logged 500.
		apireply.Error(c, h.Log, err)
	}
}
