// Package userimport loads users, roles and memberships in bulk: the fixture
// import (validated, idempotent, all-or-nothing) and the synthetic data
// generator used by benchmarks.
package userimport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/user"
)

// UserRow is a user to store with its password hash (nil: cannot log in) and,
// when Roles is not nil, the exact memberships it must have (global ones and
// those of the batch's convention).
type UserRow struct {
	User         user.User
	PasswordHash *string
	Roles        []Grant
}

// Grant is one membership; ConventionID "" is global.
type Grant struct {
	RoleID       int64
	ConventionID string
}

// Batch is what one import writes.
type Batch struct {
	ConventionID string
	Roles        []role.Role
	Users        []UserRow
}

// Stats counts what an import changed.
type Stats struct {
	RolesInserted      int64 `json:"rolesInserted"`
	RolesUpdated       int64 `json:"rolesUpdated"`
	RolesUnchanged     int64 `json:"rolesUnchanged"`
	UsersInserted      int64 `json:"usersInserted"`
	UsersUpdated       int64 `json:"usersUpdated"`
	UsersUnchanged     int64 `json:"usersUnchanged"`
	MembershipsAdded   int64 `json:"membershipsAdded"`
	MembershipsRemoved int64 `json:"membershipsRemoved"`
	PasswordsHashed    int64 `json:"passwordsHashed"`
	// UsersNarrowed counts the users whose permissions the import may have
	// narrowed: it took a membership from them, or a permission from a role
	// they hold.
	UsersNarrowed int64 `json:"usersNarrowed"`
	// UsersSignedOut counts the stored users whose password the import
	// changed or removed: auth signs each of them out everywhere.
	UsersSignedOut int64 `json:"usersSignedOut"`
}

// RejectedError lists why a fixture was refused; nothing was stored.
type RejectedError struct{ Problems fixture.Problems }

func (e *RejectedError) Error() string { return e.Problems.Err().Error() }

// Store is what the loaders need from the database.
type Store interface {
	// PasswordHashes returns the stored hashes of the given users (those
	// without a hash or not stored are absent).
	PasswordHashes(ctx context.Context, ids []int64) (map[int64]string, error)
	// Import writes b in one transaction, or nothing with a *RejectedError
	// naming the records that clash with stored data. It returns the ids of
	// the users whose permissions it may have narrowed (Stats.UsersNarrowed).
	Import(ctx context.Context, b Batch) (Stats, []int64, error)
	Generator
}

// Import validates the users and roles sections of doc and stores them.
// conventionID is used when the document names none. Passwords already
// stored are verified rather than hashed again, so an unchanged user is not
// rewritten. After the import commits, notify (when not nil) is told about
// each user whose permissions it may have narrowed, as after a role
// revocation (role.Tell, failures logged to log), so that what the user
// authorized apps to do with a lost permission ends at once.
func Import(ctx context.Context, store Store, doc *fixture.Document, conventionID string, params password.Params,
	notify role.Notifier, log *slog.Logger) (Stats, error) {
	if doc.ConventionID != "" {
		conventionID = doc.ConventionID
	}
	b, plain, problems := batchOf(doc, conventionID)
	if len(problems) > 0 {
		return Stats{}, &RejectedError{Problems: problems}
	}
	hashed, err := hashPasswords(ctx, store, b.Users, plain, params)
	if err != nil {
		return Stats{}, err
	}
	st, narrowed, err := store.Import(ctx, b)
	if err != nil {
		return Stats{}, err
	}
	st.PasswordsHashed = hashed
	st.UsersNarrowed = int64(len(narrowed))
	if notify != nil {
		role.Tell(ctx, notify, log, narrowed)
	}
	return st, nil
}

// batchOf validates doc and converts it; plain holds the given passwords by
// index into Users.
func batchOf(doc *fixture.Document, conventionID string) (Batch, map[int]string, fixture.Problems) {
	var p fixture.Problems
	b := Batch{ConventionID: conventionID}
	if strings.TrimSpace(doc.ConventionID) != doc.ConventionID || len(doc.ConventionID) > 64 {
		p.Addf("conventionId: must be a short identifier without surrounding spaces")
	}
	roleIDs := map[int64]bool{}
	roleNames := map[string]int64{}
	for i, r := range doc.Roles {
		where := fmt.Sprintf("roles[%d] (id %d)", i, r.ID)
		x := role.Role{ID: r.ID, Name: r.Name, Permissions: r.Permissions, Grantable: r.Grantable}
		if x.Permissions == nil {
			x.Permissions = []string{}
		}
		for _, msg := range role.Validate(x) {
			p.Addf("%s: %s", where, msg)
		}
		if roleIDs[r.ID] {
			p.Addf("%s: id: appears twice in the file", where)
		}
		if other, dup := roleNames[r.Name]; dup {
			p.Addf("%s: name: %q is also the name of role %d in the file", where, r.Name, other)
		}
		roleIDs[r.ID], roleNames[r.Name] = true, r.ID
		b.Roles = append(b.Roles, x)
	}
	plain := map[int]string{}
	userIDs := map[int64]bool{}
	usernames, emails := map[string]int64{}, map[string]int64{}
	for i, fu := range doc.Users {
		where := fmt.Sprintf("users[%d] (id %d)", i, fu.ID)
		u := userOf(fu)
		for field, msg := range user.Validate(u) {
			p.Addf("%s: %s: %s", where, field, msg)
		}
		if _, err := user.ParseDate(fu.BornAt); err != nil {
			p.Addf("%s: bornAt: %v", where, err)
		}
		if userIDs[fu.ID] {
			p.Addf("%s: id: appears twice in the file", where)
		}
		userIDs[fu.ID] = true
		if other, dup := usernames[strings.ToLower(fu.Username)]; dup {
			p.Addf("%s: username: %q is also the username of user %d in the file (case is ignored)", where, fu.Username, other)
		}
		usernames[strings.ToLower(fu.Username)] = fu.ID
		if other, dup := emails[strings.ToLower(fu.Email)]; dup {
			p.Addf("%s: email: %q is also the email of user %d in the file (case is ignored)", where, fu.Email, other)
		}
		emails[strings.ToLower(fu.Email)] = fu.ID
		if fu.Password != nil {
			if err := password.Check(*fu.Password); err != nil {
				p.Addf("%s: password: %v", where, err)
			}
			plain[i] = *fu.Password
		}
		row := UserRow{User: u}
		if fu.Roles != nil {
			row.Roles = []Grant{}
			held := map[int64]bool{}
			for j, g := range fu.Roles {
				gwhere := fmt.Sprintf("%s: roles[%d]", where, j)
				scope, ok := role.ParseScope(g.Scope)
				switch {
				case g.ID <= 0:
					p.Addf("%s: id: must be a positive integer", gwhere)
				case held[g.ID]:
					p.Addf("%s: id: role %d is listed twice (a role is held in one scope)", gwhere, g.ID)
				case !ok:
					p.Addf("%s: scope: must be global or convention, not %q", gwhere, g.Scope)
				case scope == role.Convention && conventionID == "":
					p.Addf("%s: scope: convention needs conventionId in the file or CONVENTION_ID", gwhere)
				}
				held[g.ID] = true
				conv := ""
				if scope == role.Convention {
					conv = conventionID
				}
				row.Roles = append(row.Roles, Grant{RoleID: g.ID, ConventionID: conv})
			}
		}
		b.Users = append(b.Users, row)
	}
	return b, plain, p
}

func userOf(fu fixture.User) user.User {
	born, _ := user.ParseDate(fu.BornAt)
	u := user.User{ID: fu.ID, Username: fu.Username, Email: fu.Email, EmailVerified: fu.EmailVerified,
		IdentityVerified: fu.IdentityVerified, FirstName: fu.FirstName, LastName: fu.LastName,
		PreferredName: fu.PreferredName, BornAt: born, Phone: fu.Phone, Newsletter: fu.Newsletter,
		ProfilePictureURL: fu.ProfilePictureURL}
	if a := fu.Address; a != nil {
		u.Address = &user.Address{Line1: a.AddressLine1, Line2: a.AddressLine2, City: a.AddressCity,
			State: a.AddressState, Zipcode: a.AddressZipcode, Country: a.AddressCountry}
	}
	return u
}

// hashPasswords sets PasswordHash of every row with a password: the stored
// hash when the password still matches it, else a new hash. The argon2 work
// runs on every core.
func hashPasswords(ctx context.Context, store Store, rows []UserRow, plain map[int]string, params password.Params) (int64, error) {
	if len(plain) == 0 {
		return 0, nil
	}
	ids := make([]int64, 0, len(plain))
	for i := range plain {
		ids = append(ids, rows[i].User.ID)
	}
	stored, err := store.PasswordHashes(ctx, ids)
	if err != nil {
		return 0, err
	}
	jobs := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		hashed   int64
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				pw := plain[i]
				if old, ok := stored[rows[i].User.ID]; ok {
					if same, err := password.Verify(pw, old); err == nil && same {
						rows[i].PasswordHash = &old
						continue
					}
				}
				h, err := password.Hash(pw, params)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("hashing the password of user %d: %w", rows[i].User.ID, err)
				}
				hashed++
				mu.Unlock()
				rows[i].PasswordHash = &h
			}
		}()
	}
	for i := range plain {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return hashed, firstErr
	}
	return hashed, ctx.Err()
}

// IsRejected reports whether err is a refused fixture (the user's input, not
// a failure of the system).
func IsRejected(err error) bool {
	var re *RejectedError
	return errors.As(err, &re)
}
