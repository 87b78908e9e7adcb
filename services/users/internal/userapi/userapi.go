// Package userapi is the HTTP layer of the users service: the public API
// routed by the gateway and the internal API (libs/usersclient) for the other
// services, both rendering errors with libs/apierror.
package userapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/userid"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/volunteersclient"
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

// VolunteerStatus is what the current-user view needs from the volunteers
// service (volunteersclient.Client).
type VolunteerStatus interface {
	Status(ctx context.Context, userID int64) (volunteersclient.Status, error)
}

// Deps are the handlers' dependencies.
type Deps struct {
	Log        *slog.Logger
	Users      *user.Service
	Roles      *role.Service
	Volunteers VolunteerStatus
	Cursor     *cursor.Codec
	// Protected returns the middleware chain of a public route needing a
	// scope: token, scope, then the client's rate limit
	// (service.ResourceDeps.ProtectedAndLimited, as volunteers and
	// registrations use).
	Protected func(scope string) []gin.HandlerFunc
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
	Registration http.Handler // /api/v0/users/:id/registration and .../orders: the registrations service
}

// Handler serves the users API.
type Handler struct {
	Deps
	reply       apireply.Replier
	searchPages page.Paginator
	rolePages   page.Paginator
}

// New returns the handler of d.
func New(d Deps) *Handler {
	return &Handler{Deps: d, reply: apireply.Replier{Log: d.Log, Rules: errorRules},
		searchPages: page.Paginator{Codec: d.Cursor, Query: "users.search"},
		rolePages:   page.Paginator{Codec: d.Cursor, Query: "roles.list"},
	}
}

// Register adds the public routes to public and the internal ones to internal.
func (h *Handler) Register(public, internal gin.IRouter) {
	d := h.Deps
	public.GET("/", rootPage)
	public.HEAD("/", rootPage)
	public.GET("/api/docs", apispec.Handler())
	public.HEAD("/api/docs", apispec.Handler())

	// The server bounds every request by REQUEST_TIMEOUT (libs/httpserver);
	// the forwarded routes below are taken out of it (OwnerRoutes).
	public.GET(PathUserInfo, append(h.Protected(ScopeOpenID), h.userInfo)...)
	public.POST(PathUserInfo, append(h.Protected(ScopeOpenID), h.userInfo)...)
	public.GET("/api/users/:id", append(h.Protected(ScopeProfile), h.currentUser)...)
	public.GET("/api/v0/users/:id", append(h.Protected(ScopeUserRead), h.getUser)...)
	public.POST("/api/v0/users/search", append(h.Protected(ScopeUserRead), h.searchUsers)...)
	public.GET("/api/v0/roles", append(h.Protected(ScopeUserRead), h.listRoles)...)
	// gin needs one name per path segment: :id is the contract's :userId.
	public.GET("/api/v0/users/:id/roles", append(h.Protected(ScopeUserRead), h.userRoles)...)
	public.PUT("/api/v0/users/:id/roles/:roleId", append(h.Protected(ScopeRolesUpdate), h.grantRole)...)
	public.DELETE("/api/v0/users/:id/roles/:roleId", append(h.Protected(ScopeRolesUpdate), h.revokeRole)...)
	// Every method, so that the owner answers exactly as when the gateway
	// routed these paths to it (its 405s included); no deadline, token check
	// or rate limit of users' own: the owner applies its own. These routes
	// must be exempt from the server's REQUEST_TIMEOUT (OwnerRoutes).
	for path, owner := range map[string]http.Handler{
		VolunteerRoute:    d.Owners.Volunteer,
		RegistrationRoute: d.Owners.Registration,
		OrdersRoute:       d.Owners.Registration,
	} {
		if owner != nil {
			public.Any(path, gin.WrapH(owner))
		}
	}

	internal.POST(usersclient.PathSummaries, h.summaries)
	internal.POST(usersclient.PathVerify, h.verify)
	internal.POST(usersclient.PathAccount, h.account)
	internal.GET(usersclient.PathPermissions, h.permissions)
}

// OwnerRoutes are the routes users forwards to the service that owns them
// (Owners); serve exempts them from the server's REQUEST_TIMEOUT
// (httpserver.Server.ExemptFromRequestTimeout). The forwarder bounds each
// exchange itself (config.ForwardTimeout, 5 s, the answer's body included),
// on purpose longer than the owner's own REQUEST_TIMEOUT (3 s by default), so
// that the owner's answer, a 503 of its own included, reaches the client: a
// deadline of users' own as short as the owner's would answer 503 first.
func OwnerRoutes() []string { return []string{VolunteerRoute, RegistrationRoute, OrdersRoute} }

// The forwarded routes (gin needs one name per path segment: :id is the
// contract's :userId).
const (
	VolunteerRoute    = "/api/v0/users/:id/volunteer"
	RegistrationRoute = "/api/v0/users/:id/registration"
	OrdersRoute       = "/api/v0/users/:id/orders"
)

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

// errorRules map the business errors of user and role to their responses;
// everything else takes the path every service shares (libs/apireply).
var errorRules = []apireply.Rule{
	apireply.Is(user.ErrNotFound, func() *apierror.Error { return apierror.NotFound("No such user.") }),
	apireply.Is(role.ErrUserNotFound, func() *apierror.Error { return apierror.NotFound("No such user.") }),
	apireply.Is(role.ErrRoleNotFound, func() *apierror.Error { return apierror.NotFound("No such role.") }),
	apireply.Is(role.ErrNotGrantable, func() *apierror.Error {
		return apierror.Forbidden("Apps may not grant or remove this role: it carries sensitive permissions and an operator has not marked it grantable.")
	}),
	apireply.Is(role.ErrNotHeld, func() *apierror.Error { return apierror.NotFound("The user does not have this role.") }),
	apireply.Is(role.ErrAlreadyHeld, func() *apierror.Error {
		return apierror.Conflict(apierror.CodeUserWasAlreadyAdded, "UserWasAlreadyAdded: the user already has this role.")
	}),
	// Every password slot stayed taken until the request's deadline: a
	// login burst beyond what this replica's cores hash (decision 0080).
	apireply.Is(password.ErrBusy, func() *apierror.Error { return apierror.Unavailable("Password checking") }),
}
