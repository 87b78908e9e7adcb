// Package user is the business layer of users: reading, searching, creating
// users and checking their credentials.
package user

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/eventreg/eventreg/libs/coalesce"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/services/users/internal/password"
)

// Errors of the business layer.
var (
	ErrNotFound       = errors.New("user not found")
	ErrBadCredentials = errors.New("bad credentials")
	ErrTooManyIDs     = errors.New("too many ids")
)

// DuplicateError says a unique field (id, username, email) is taken.
type DuplicateError struct{ Field string }

func (e *DuplicateError) Error() string { return e.Field + " is already used by another user" }

// Address is a postal address.
type Address struct {
	Line1   string  `json:"line1"`
	Line2   *string `json:"line2"`
	City    string  `json:"city"`
	State   string  `json:"state"`
	Zipcode string  `json:"zipcode"`
	Country string  `json:"country"`
}

// User is a person. Read, it is also the payload of the user's events (its
// JSON form is a storage format: events written by one release are rendered
// by the next).
type User struct {
	ID                int64     `json:"id"`
	Username          string    `json:"username"`
	Email             string    `json:"email"`
	EmailVerified     bool      `json:"emailVerified"`
	IdentityVerified  bool      `json:"identityVerified"`
	FirstName         string    `json:"firstName"`
	LastName          string    `json:"lastName"`
	PreferredName     *string   `json:"preferredName"`
	BornAt            time.Time `json:"bornAt"` // a date, UTC midnight
	Phone             *string   `json:"phone"`
	Newsletter        bool      `json:"newsletter"`
	ProfilePictureURL *string   `json:"profilePictureUrl"`
	Address           *Address  `json:"address"`
	// UpdatedAt is when the record last changed (created, a field or the
	// password changed): UserInfo's updated_at. Not part of the
	// user-updated event's payload.
	UpdatedAt time.Time `json:"-"`
}

// Summary is the part of a user other services show beside their own
// records (usersclient.UserSummary).
type Summary struct {
	ID            int64
	Username      string
	Email         string
	FirstName     string
	LastName      string
	PreferredName *string
	Phone         *string
}

// Filter narrows a search. It is also what a page cursor is bound to, so its
// JSON form must be canonical: Email is stored lower-cased.
type Filter struct {
	RoleID int64  `json:"roleId,omitempty"`
	Email  string `json:"email,omitempty"`
}

// MaxSummaryIDs is the most users one Summaries call returns.
const MaxSummaryIDs = 100

// Store is what the business layer needs from the database.
type Store interface {
	Get(ctx context.Context, id int64) (User, error)
	// Search returns up to ks.Limit+1 users with id > ks.After in id order;
	// a role filter matches global memberships and those of conventionID.
	Search(ctx context.Context, f Filter, conventionID string, ks keyset.Seek) ([]User, error)
	// GetMany returns the users among ids (every column; unknown ids left out).
	GetMany(ctx context.Context, ids []int64) ([]User, error)
	// Summaries returns the summaries of the users among ids in id order
	// (only the summary's columns; unknown ids left out).
	Summaries(ctx context.Context, ids []int64) ([]Summary, error)
	// Credentials returns the id and password hash ("" for none) of the user
	// whose username or email is login, ignoring case, or ErrNotFound.
	Credentials(ctx context.Context, login string) (int64, string, error)
	Create(ctx context.Context, u User, passwordHash *string) error
	// SetPassword replaces the password hash and writes the user's
	// SignedOutEvent in the same transaction (ErrNotFound).
	SetPassword(ctx context.Context, id int64, passwordHash string) error
	// SignOut writes the user's SignedOutEvent (ErrNotFound).
	SignOut(ctx context.Context, id int64) error
	NextID(ctx context.Context) (int64, error)
}

// Service holds the user rules.
type Service struct {
	store        Store
	conventionID string
	// passwords hashes and checks passwords, a bounded number at once.
	passwords *password.Hasher
	// byID coalesces concurrent Gets into one GetMany query (decision 0075).
	byID *coalesce.Loader[int64, User]
}

// NewService returns the user business layer for the current convention.
func NewService(store Store, conventionID string, passwords *password.Hasher) *Service {
	c := &Service{store: store, conventionID: conventionID, passwords: passwords}
	c.byID = coalesce.New(c.fetchByID, coalesce.KeyLookups)
	return c
}

// Get returns one user or ErrNotFound. Concurrent Gets share database
// queries: under load one query reads a handful of users.
func (c *Service) Get(ctx context.Context, id int64) (User, error) {
	u, ok, err := c.byID.Load(ctx, id)
	if err != nil {
		return u, err
	}
	if !ok {
		return u, ErrNotFound
	}
	return u, nil
}

func (c *Service) fetchByID(ctx context.Context, ids []int64) (map[int64]User, error) {
	if len(ids) == 1 {
		u, err := c.store.Get(ctx, ids[0])
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return map[int64]User{u.ID: u}, nil
	}
	users, err := c.store.GetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]User, len(users))
	for _, u := range users {
		out[u.ID] = u
	}
	return out, nil
}

// Search returns a keyset page (up to ks.Limit+1 rows) of users matching f.
func (c *Service) Search(ctx context.Context, f Filter, ks keyset.Seek) ([]User, error) {
	return c.store.Search(ctx, f, c.conventionID, ks)
}

// Summaries returns the summaries of the users among ids (unknown ids are
// left out).
func (c *Service) Summaries(ctx context.Context, ids []int64) ([]Summary, error) {
	if len(ids) > MaxSummaryIDs {
		return nil, ErrTooManyIDs
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return c.store.Summaries(ctx, ids)
}

// Verify checks a username or email and a password and returns the user id,
// or ErrBadCredentials. It takes as long for an unknown login as for a known one.
// While the password hasher is saturated it waits for a slot as long as ctx
// allows, then fails with password.ErrBusy.
func (c *Service) Verify(ctx context.Context, login, pw string) (int64, error) {
	login = strings.TrimSpace(login)
	var id int64
	var hash string
	if login != "" && len(login) <= 320 && pw != "" && len(pw) <= 4*password.MaxLength {
		var err error
		id, hash, err = c.store.Credentials(ctx, login)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return 0, err
		}
	}
	ok, err := c.passwords.Check(ctx, pw, hash)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, ErrBadCredentials
	}
	return id, nil
}

// Account returns the id of the user a username or email names (case is
// ignored), or ErrNotFound: auth keys its sign-in throttling on it, so that
// both ways of naming one account count against it together.
func (c *Service) Account(ctx context.Context, login string) (int64, error) {
	login = strings.TrimSpace(login)
	if login == "" || len(login) > 320 {
		return 0, ErrNotFound
	}
	id, _, err := c.store.Credentials(ctx, login)
	return id, err
}

// NewUser is what Create needs; ID 0 picks the next free id.
type NewUser struct {
	User
	Password *string
}

// Create validates and stores a new user. Problems with the input come back
// as a *ValidationError.
func (c *Service) Create(ctx context.Context, nu NewUser) (User, error) {
	u := nu.User
	if u.ID == 0 {
		id, err := c.store.NextID(ctx)
		if err != nil {
			return User{}, err
		}
		u.ID = id
	}
	problems := Validate(u)
	var hash *string
	if nu.Password != nil {
		if err := password.Check(*nu.Password); err != nil {
			problems["password"] = err.Error()
		} else {
			h, err := c.passwords.Hash(ctx, *nu.Password)
			if err != nil {
				return User{}, err
			}
			hash = &h
		}
	}
	if len(problems) > 0 {
		return User{}, &ValidationError{Fields: problems}
	}
	if err := c.store.Create(ctx, u, hash); err != nil {
		return User{}, err
	}
	return u, nil
}

// SignOut asks auth, through the outbox, to end every session and every
// app authorization of the user (SignedOutEvent).
func (c *Service) SignOut(ctx context.Context, id int64) error { return c.store.SignOut(ctx, id) }

// SetPassword replaces a user's password; auth then signs the user out
// everywhere (SignedOutEvent), as whoever held the old one may be signed in.
func (c *Service) SetPassword(ctx context.Context, id int64, pw string) error {
	if err := password.Check(pw); err != nil {
		return &ValidationError{Fields: map[string]string{"password": err.Error()}}
	}
	h, err := c.passwords.Hash(ctx, pw)
	if err != nil {
		return err
	}
	return c.store.SetPassword(ctx, id, h)
}

// ValidationError lists what is wrong with a user, by field.
type ValidationError struct{ Fields map[string]string }

func (e *ValidationError) Error() string {
	parts := make([]string, 0, len(e.Fields))
	for _, k := range sortedKeys(e.Fields) {
		parts = append(parts, k+": "+e.Fields[k])
	}
	return "invalid user: " + strings.Join(parts, "; ")
}

var (
	e164    = regexp.MustCompile(`^\+[1-9][0-9]{1,14}$`)
	country = regexp.MustCompile(`^[A-Z]{2}$`)
)

// Validate returns what is wrong with u, keyed by the field name of the
// fixture format; empty when nothing is.
func Validate(u User) map[string]string {
	p := map[string]string{}
	text := func(field, v string, required bool, max int) {
		switch {
		case !utf8.ValidString(v):
			p[field] = "must be valid UTF-8"
		case required && strings.TrimSpace(v) == "":
			p[field] = "must not be empty"
		case utf8.RuneCountInString(v) > max:
			p[field] = fmt.Sprintf("must be at most %d characters", max)
		}
	}
	if u.ID <= 0 {
		p["id"] = "must be a positive integer"
	}
	text("username", u.Username, true, 64)
	if strings.ContainsAny(u.Username, "@ \t\r\n") {
		p["username"] = "must not contain @ or spaces"
	}
	text("email", u.Email, true, 254)
	if _, ok := p["email"]; !ok {
		if a, err := mail.ParseAddress(u.Email); err != nil || a.Address != u.Email || a.Name != "" {
			p["email"] = "must be an email address such as name@example.org"
		}
	}
	text("firstName", u.FirstName, true, 200)
	text("lastName", u.LastName, true, 200)
	if u.PreferredName != nil {
		text("preferredName", *u.PreferredName, false, 200)
	}
	if u.BornAt.IsZero() {
		p["bornAt"] = "must be a date YYYY-MM-DD"
	} else if u.BornAt.Year() < 1900 || u.BornAt.After(time.Now()) {
		p["bornAt"] = "must be a date between 1900-01-01 and today"
	}
	if u.Phone != nil && !e164.MatchString(*u.Phone) {
		p["phone"] = "must be an E.164 number such as +15555550100"
	}
	if u.ProfilePictureURL != nil {
		if pu, err := url.Parse(*u.ProfilePictureURL); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" || len(*u.ProfilePictureURL) > 2048 {
			p["profilePictureUrl"] = "must be an http(s) URL"
		}
	}
	if a := u.Address; a != nil {
		text("address.addressLine1", a.Line1, true, 200)
		if a.Line2 != nil {
			text("address.addressLine2", *a.Line2, false, 200)
		}
		text("address.addressCity", a.City, true, 200)
		text("address.addressState", a.State, false, 200)
		text("address.addressZipcode", a.Zipcode, false, 40)
		if !country.MatchString(a.Country) {
			p["address.addressCountry"] = "must be a two-letter ISO 3166-1 code in capitals, such as US"
		}
	}
	return p
}

// ParseDate reads a YYYY-MM-DD date.
func ParseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, errors.New("must be a date YYYY-MM-DD")
	}
	return t, nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
