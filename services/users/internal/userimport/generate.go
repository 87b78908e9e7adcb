package userimport

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// FirstGeneratedID is the lowest id the generator gives a user: far above the
// ids of hand-written fixtures.
const FirstGeneratedID = 10_000_001

// Generator is what Generate needs from the database.
type Generator interface {
	// MaxIDs returns the highest user and role ids in use (0 when none).
	MaxIDs(ctx context.Context) (userID, roleID int64, err error)
	InsertRoles(ctx context.Context, roles []role.Role) error
	// CopyUsers streams n users and their memberships with COPY, in one
	// transaction.
	CopyUsers(ctx context.Context, users []user.User, members []Membership) error
	Analyze(ctx context.Context) error
}

// Membership is one role membership row; ConventionID "" is global.
type Membership struct {
	UserID, RoleID int64
	ConventionID   string
}

// GenerateOptions shape a synthetic data set.
type GenerateOptions struct {
	Users, Roles int
	Seed         uint64
	// ConventionID is given to about half of the memberships; "" makes them all global.
	ConventionID string
	// Progress receives a line per chunk (nil for none).
	Progress io.Writer
	// ChunkSize is the number of users per COPY (default 50,000).
	ChunkSize int
}

// Generated says what Generate made.
type Generated struct {
	FirstUserID int64 `json:"firstUserId"`
	LastUserID  int64 `json:"lastUserId"`
	FirstRoleID int64 `json:"firstRoleId"`
	LastRoleID  int64 `json:"lastRoleId"`
	Memberships int64 `json:"memberships"`
}

var (
	firstNames = []string{"Alex", "Sam", "Jordan", "Taylor", "Morgan", "Casey", "Riley", "Jamie", "Avery", "Quinn", "Robin", "Drew", "Kai", "Rowan", "Sage", "Emery"}
	lastNames  = []string{"Smith", "Garcia", "Nguyen", "Müller", "Kowalski", "Okafor", "Tanaka", "Silva", "Haddad", "Johansson", "O'Brien", "Rossi", "Dubois", "Kim", "Novak", "Patel"}
	perms      = []string{"system:login", "con:read", "user:read", "registration:read", "volunteer:read", "user:note:read", "staff:roles:update", "user:update"}
)

// Generate adds opts.Users synthetic users (ids from FirstGeneratedID or above
// every stored id) and opts.Roles roles, each user holding 0 to 3 of them.
// The same seed gives the same data. Users have no password.
func Generate(ctx context.Context, g Generator, opts GenerateOptions) (Generated, error) {
	if opts.Users < 0 || opts.Roles < 0 {
		return Generated{}, fmt.Errorf("the numbers of users and roles must not be negative")
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 50_000
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	maxUser, maxRole, err := g.MaxIDs(ctx)
	if err != nil {
		return Generated{}, err
	}
	res := Generated{FirstUserID: max(maxUser+1, FirstGeneratedID), FirstRoleID: maxRole + 1}
	res.LastUserID, res.LastRoleID = res.FirstUserID+int64(opts.Users)-1, res.FirstRoleID+int64(opts.Roles)-1
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))

	roles := make([]role.Role, opts.Roles)
	for i := range roles {
		id := res.FirstRoleID + int64(i)
		p := []string{}
		for _, name := range perms {
			if rng.IntN(4) == 0 {
				p = append(p, name)
			}
		}
		roles[i] = role.Role{ID: id, Name: fmt.Sprintf("generated-%d", id), Permissions: p}
	}
	if err := g.InsertRoles(ctx, roles); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "roles: %d (ids %d-%d)\n", opts.Roles, res.FirstRoleID, res.LastRoleID)

	start := time.Now()
	born := time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC)
	for done := 0; done < opts.Users; {
		n := min(opts.ChunkSize, opts.Users-done)
		users := make([]user.User, n)
		var members []Membership
		for i := range users {
			id := res.FirstUserID + int64(done+i)
			phone := fmt.Sprintf("+1555%07d", id%10_000_000)
			u := user.User{ID: id, Username: fmt.Sprintf("gen%d", id), Email: fmt.Sprintf("gen%d@example.invalid", id),
				EmailVerified: rng.IntN(10) > 0, IdentityVerified: rng.IntN(2) == 0,
				FirstName: firstNames[rng.IntN(len(firstNames))], LastName: lastNames[rng.IntN(len(lastNames))],
				BornAt: born.AddDate(0, 0, rng.IntN(365*55)), Newsletter: rng.IntN(3) == 0}
			if rng.IntN(4) > 0 {
				u.Phone = &phone
			}
			users[i] = u
			if opts.Roles > 0 {
				k := rng.IntN(4)
				picked := map[int64]bool{}
				for range k {
					rid := res.FirstRoleID + int64(rng.IntN(opts.Roles))
					if picked[rid] {
						continue
					}
					picked[rid] = true
					conv := ""
					if opts.ConventionID != "" && rng.IntN(2) == 0 {
						conv = opts.ConventionID
					}
					members = append(members, Membership{UserID: id, RoleID: rid, ConventionID: conv})
				}
			}
		}
		if err := g.CopyUsers(ctx, users, members); err != nil {
			return res, err
		}
		done += n
		res.Memberships += int64(len(members))
		fmt.Fprintf(progress, "users: %d/%d, memberships: %d (%.1fs)\n", done, opts.Users, res.Memberships, time.Since(start).Seconds())
	}
	if err := g.Analyze(ctx); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "done in %.1fs\n", time.Since(start).Seconds())
	return res, nil
}
