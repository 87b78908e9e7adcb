// Package role is the business layer of roles and role membership: listing
// roles, the roles a user holds, granting and revoking them, and the
// permissions a user gets through them.
package role

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/eventreg/eventreg/libs/coalesce"
	"github.com/eventreg/eventreg/libs/page/keyset"
)

// Errors of the business layer.
var (
	ErrUserNotFound = errors.New("user not found")
	ErrRoleNotFound = errors.New("role not found")
	ErrAlreadyHeld  = errors.New("the user already has the role")
	ErrNotHeld      = errors.New("the user does not have the role")
	ErrNameTaken    = errors.New("a role with this name exists")
	ErrIDTaken      = errors.New("a role with this id exists")
	ErrNoConvention = errors.New("no current convention (CONVENTION_ID) for a convention-scoped membership")
	// ErrNotGrantable: apps may not grant or remove this role (AppsMayGrant).
	ErrNotGrantable = errors.New("apps may not grant or remove this role")
)

// Scope is how widely a membership applies.
type Scope string

// Scopes of a membership.
const (
	Global     Scope = "global"     // across the organization
	Convention Scope = "convention" // for the current convention only
)

// ParseScope reads "global" or "convention".
func ParseScope(s string) (Scope, bool) {
	switch Scope(s) {
	case Global, Convention:
		return Scope(s), true
	}
	return "", false
}

// Role is a named set of permissions.
type Role struct {
	ID          int64
	Name        string
	Permissions []string
	// Grantable is the operator's mark that apps may grant and remove the
	// role even though it carries sensitive permissions (AppsMayGrant).
	Grantable bool
}

// Sensitive reports whether a permission is the name of a sensitive scope:
// a user holding it may consent to an app reading other users' data or
// changing their roles. serve and the CLI pass the route table's
// (apispec.RouteTable.SensitiveScope, libs/apispec/endpoints.json, the table
// auth's scope catalog is tested against); this package speaks no HTTP.
type Sensitive func(permission string) bool

// SensitivePermissions returns the permissions of perms that sensitive names.
func SensitivePermissions(perms []string, sensitive Sensitive) []string {
	var out []string
	for _, p := range perms {
		if sensitive(p) {
			out = append(out, p)
		}
	}
	return out
}

// AppsMayGrant reports whether an app (a token with user:roles:update) may
// grant r or take it from a user: a role carrying no sensitive permission,
// or one an operator marked grantable. Otherwise an app with that scope
// could make any account an administrator, or strip the real ones; only
// operators (the users CLI, fixtures) manage such roles.
func (r Role) AppsMayGrant(sensitive Sensitive) bool {
	return r.Grantable || len(SensitivePermissions(r.Permissions, sensitive)) == 0
}

// Held is a role as a user holds it.
type Held struct {
	Role  Role
	Scope Scope
}

// Store is what the business layer needs from the database. A membership is
// stored with convention "" when global.
type Store interface {
	// List returns up to ks.Limit+1 roles with id > ks.After in id order.
	List(ctx context.Context, ks keyset.Seek) ([]Role, error)
	// HeldBy returns the roles each of userIDs holds globally or for
	// conventionID, in role id order; unknown users are not in the map.
	HeldBy(ctx context.Context, userIDs []int64, conventionID string) (map[int64][]Held, error)
	// Grant adds the membership unless the user holds the role globally or
	// for conventionID (ErrAlreadyHeld); ErrUserNotFound, ErrRoleNotFound.
	// It is atomic against concurrent grants and revokes of the same user,
	// and writes the user's user-updated event (user.UpdatedEvent) in the
	// same transaction.
	Grant(ctx context.Context, userID, roleID int64, conventionID string, scope Scope) error
	// Revoke removes the global membership and that of conventionID, with
	// the user's user-updated event and NarrowedEvent; ErrNotHeld when there
	// is none, ErrUserNotFound, ErrRoleNotFound.
	Revoke(ctx context.Context, userID, roleID int64, conventionID string) error
	Create(ctx context.Context, r Role) error
	NextID(ctx context.Context) (int64, error)
	// Get returns one role; ErrRoleNotFound.
	Get(ctx context.Context, roleID int64) (Role, error)
	// SetGrantable sets the role's Grantable mark; ErrRoleNotFound.
	SetGrantable(ctx context.Context, roleID int64, grantable bool) error
	// SwitchConvention records conventionID as the one whose memberships
	// count and, when another one was recorded, writes a NarrowedEvent for
	// each user holding a membership of it, in the same transaction; it
	// returns how many. The first call records conventionID and writes none.
	SwitchConvention(ctx context.Context, conventionID string) (lapsed int, err error)
}

// Service holds the role rules for the current convention.
type Service struct {
	store        Store
	conventionID string
	// heldBy coalesces concurrent Held lookups into one HeldBy query, as
	// user.Service does for Get (decision 0075).
	heldBy *coalesce.Loader[int64, []Held]
	notify Notifier
	log    *slog.Logger
	// sensitive is what GrantByApp and RevokeByApp judge roles by; nil
	// (not configured): every permission is sensitive.
	sensitive Sensitive
}

// JudgeSensitivityBy makes c judge, for GrantByApp and RevokeByApp, which
// permissions are sensitive by s. Until it is called every permission is,
// so a service wired without it refuses apps rather than trusting them.
func (c *Service) JudgeSensitivityBy(s Sensitive) { c.sensitive = s }

// Notifier hears that a user's permissions may have shrunk, so that what
// the user authorized apps to do with them ends (authapi.Client: auth
// revokes the authorizations that no longer stand).
type Notifier interface {
	UserChanged(ctx context.Context, userID int64) (revoked int, err error)
}

// notifyTimeout bounds the call to the notifier after a revocation.
const notifyTimeout = 3 * time.Second

// NotifyRevocations makes c tell n after every role revocation, at once. A
// failed notification is logged to log and does not undo the revocation:
// the NarrowedEvent written with it reaches auth through the relay
// (PublishNotices) once auth answers.
func (c *Service) NotifyRevocations(n Notifier, log *slog.Logger) {
	c.notify, c.log = n, log
}

// Tell tells n, one by one, that the permissions of userIDs may have shrunk
// (a change already committed), each call bounded by notifyTimeout, and
// returns how many were told. It stops at the first failure, which it logs
// to log with the number left untold: the authorization server is then
// unreachable, and the NarrowedEvent notices written with the change tell
// it later (PublishNotices).
func Tell(ctx context.Context, n Notifier, log *slog.Logger, userIDs []int64) int {
	for i, id := range userIDs {
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
		_, err := n.UserChanged(nctx, id)
		cancel()
		if err != nil {
			log.WarnContext(ctx, "telling auth about narrowed permissions failed; the notices in the outbox are retried by the users relay",
				"user_id", id, "untold", len(userIDs)-i, "error", err.Error())
			return i
		}
	}
	return len(userIDs)
}

// NewService returns the role business layer.
func NewService(store Store, conventionID string) *Service {
	c := &Service{store: store, conventionID: conventionID}
	c.heldBy = coalesce.New(func(ctx context.Context, ids []int64) (map[int64][]Held, error) {
		return store.HeldBy(ctx, ids, conventionID)
	}, coalesce.KeyLookups)
	return c
}

// List returns a keyset page of roles.
func (c *Service) List(ctx context.Context, ks keyset.Seek) ([]Role, error) {
	return c.store.List(ctx, ks)
}

// Held returns the roles a user holds now (globally or for the current convention).
// Concurrent lookups share queries; the slice is shared by the lookups of
// one user in a batch, so callers must not modify it.
func (c *Service) Held(ctx context.Context, userID int64) ([]Held, error) {
	held, ok, err := c.heldBy.Load(ctx, userID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrUserNotFound
	}
	return held, nil
}

// Grant gives a user a role; the user must not hold it already in any scope.
func (c *Service) Grant(ctx context.Context, userID, roleID int64, scope Scope) error {
	if scope == Convention && c.conventionID == "" {
		return ErrNoConvention
	}
	return c.store.Grant(ctx, userID, roleID, c.conventionID, scope)
}

// GrantByApp is Grant on an app's request (the API): ErrNotGrantable when
// apps may not grant the role (AppsMayGrant), ErrRoleNotFound.
func (c *Service) GrantByApp(ctx context.Context, userID, roleID int64, scope Scope) error {
	if err := c.appMayChange(ctx, roleID); err != nil {
		return err
	}
	return c.Grant(ctx, userID, roleID, scope)
}

// RevokeByApp is Revoke on an app's request (the API), with GrantByApp's
// ceiling: an app that may not grant a role may not take it away either.
func (c *Service) RevokeByApp(ctx context.Context, userID, roleID int64) error {
	if err := c.appMayChange(ctx, roleID); err != nil {
		return err
	}
	return c.Revoke(ctx, userID, roleID)
}

// appMayChange checks the ceiling of role changes apps ask for. The role is
// read before the change, not in its transaction: an operator changing the
// mark at the same moment is ordered either way, as if a moment apart.
func (c *Service) appMayChange(ctx context.Context, roleID int64) error {
	r, err := c.store.Get(ctx, roleID)
	if err != nil {
		return err
	}
	sensitive := c.sensitive
	if sensitive == nil {
		sensitive = func(string) bool { return true }
	}
	if !r.AppsMayGrant(sensitive) {
		return ErrNotGrantable
	}
	return nil
}

// SetGrantable marks a role as one apps may grant and remove, or unmarks it
// (an operator's decision; see AppsMayGrant).
func (c *Service) SetGrantable(ctx context.Context, roleID int64, grantable bool) error {
	return c.store.SetGrantable(ctx, roleID, grantable)
}

// SwitchConvention makes the convention of c (CONVENTION_ID) the one whose
// memberships count, as serve starts. The memberships of the convention
// recorded before lapse with the change: their users get a NarrowedEvent,
// written with the record and told to auth by the relay, so that what those
// memberships allowed apps to do ends, whether or not auth is reachable now.
// It returns how many users' permissions lapsed.
func (c *Service) SwitchConvention(ctx context.Context) (int, error) {
	return c.store.SwitchConvention(ctx, c.conventionID)
}

// Revoke takes a role from a user, whatever the scope it was held in.
func (c *Service) Revoke(ctx context.Context, userID, roleID int64) error {
	if err := c.store.Revoke(ctx, userID, roleID, c.conventionID); err != nil {
		return err
	}
	if c.notify != nil {
		Tell(ctx, c.notify, c.log, []int64{userID})
	}
	return nil
}

// Permissions returns the union of the permissions of the roles a user holds
// now, sorted.
func (c *Service) Permissions(ctx context.Context, userID int64) ([]string, error) {
	held, err := c.Held(ctx, userID)
	if err != nil {
		return nil, err
	}
	return PermissionsOf(held), nil
}

// PermissionsOf is the sorted union of the permissions of held.
func PermissionsOf(held []Held) []string {
	out := []string{}
	for _, h := range held {
		out = append(out, h.Role.Permissions...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Create validates and stores a role; ID 0 picks the next free id.
func (c *Service) Create(ctx context.Context, r Role) (Role, error) {
	if r.ID == 0 {
		id, err := c.store.NextID(ctx)
		if err != nil {
			return Role{}, err
		}
		r.ID = id
	}
	if r.Permissions == nil {
		r.Permissions = []string{}
	}
	if problems := Validate(r); len(problems) > 0 {
		return Role{}, fmt.Errorf("invalid role: %s", strings.Join(problems, "; "))
	}
	slices.Sort(r.Permissions)
	r.Permissions = slices.Compact(r.Permissions)
	if err := c.store.Create(ctx, r); err != nil {
		return Role{}, err
	}
	return r, nil
}

var permissionName = regexp.MustCompile(`^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*$`)

// Validate returns what is wrong with r, each naming the field.
func Validate(r Role) []string {
	var p []string
	if r.ID <= 0 {
		p = append(p, "id: must be a positive integer")
	}
	switch {
	case !utf8.ValidString(r.Name) || strings.TrimSpace(r.Name) == "":
		p = append(p, "name: must not be empty")
	case utf8.RuneCountInString(r.Name) > 100:
		p = append(p, "name: must be at most 100 characters")
	}
	for i, perm := range r.Permissions {
		if len(perm) > 100 || !permissionName.MatchString(perm) {
			p = append(p, fmt.Sprintf("permissions[%d]: %q is not a permission name such as user:read", i, perm))
		}
	}
	return p
}
