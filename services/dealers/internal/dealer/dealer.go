// Package dealer is the business layer of dealers (vendors): reading them with their users' summaries and their applications, the applications' status rules, operators' changes, and validating fixture data.
package dealer

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/postal"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/usersummary"
)

// ErrNotFound is returned when there is no such dealer or application.
var ErrNotFound = errors.New("not found")

// Dealer is a business profile a user created, with its applications of one
// convention. Read, it is also the payload of its events (its JSON form is a
// storage format: events written by one release are rendered by the next).
type Dealer struct {
	ID     int64 `json:"id"`
	UserID int64 `json:"userId"`
	// ConventionID is the convention whose applications Applications holds.
	ConventionID string  `json:"conventionId"`
	Name         string  `json:"name"`
	Email        *string `json:"email"`
	postal.Address
	// Options is a JSON array of Option as the database stores it: rendered
	// as it is (decision 0078).
	Options      json.RawMessage `json:"options"`
	Applications []Application   `json:"applications"`
	CreatedAt    time.Time       `json:"createdAt"`
	UpdatedAt    time.Time       `json:"updatedAt"`
}

// Application is a dealer's application for a table in a dealer area of a
// convention. DealerRequestTypes, TableType and Options are JSON as stored
// (arrays of Product and Option, a Product).
type Application struct {
	ID                 int64           `json:"id"`
	DealerID           int64           `json:"dealerId"`
	ConventionID       string          `json:"conventionId"`
	Status             string          `json:"status"`
	SpecialRequests    *string         `json:"specialRequests"`
	TableNumber        *string         `json:"tableNumber"`
	DealerRequestTypes json.RawMessage `json:"dealerRequestTypes"`
	TableType          json.RawMessage `json:"tableType"`
	AreaID             int64           `json:"areaId"`
	AreaName           string          `json:"areaName"`
	Options            json.RawMessage `json:"options"`
	CreatedAt          time.Time       `json:"createdAt"`
	UpdatedAt          time.Time       `json:"updatedAt"`
}

// Option is an event-defined option with its id, as stored. Its fields are
// in the order jsonb keeps their keys (by length, then bytewise), so the
// stored text is what encoding it gives.
type Option struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// Product is a product of the convention's shop (a table type, an add-on),
// as stored; fields in jsonb's key order.
type Product struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Paid        bool    `json:"paid"`
	DisplayName *string `json:"displayName"`
}

// WithUser is a dealer and the summary of the user who created it.
type WithUser struct {
	Dealer
	User usersclient.UserSummary
}

// Store is what the business layer needs from storage. Dealers come with
// their applications of the convention asked for.
type Store interface {
	// Get returns ErrNotFound when there is no dealer id.
	Get(ctx context.Context, conventionID string, id int64) (Dealer, error)
	// Search returns up to ks.Limit+1 dealers with id > ks.After in id order,
	// only those of userIDs unless it is nil.
	Search(ctx context.Context, conventionID string, userIDs []int64, ks keyset.Seek) ([]Dealer, error)
	// SetStatus locks application id, asks allow whether its status may
	// become status and, when allowed and different, changes it with the
	// dealer's event. It returns the dealer (with the applications of the
	// application's convention) and whether anything changed; ErrNotFound
	// when there is no such application.
	SetStatus(ctx context.Context, id int64, status string, allow func(Application) error) (Dealer, bool, error)
	// DeleteApplication locks application id, asks allow, and deletes it with
	// the dealer's event; it returns the dealer as left.
	DeleteApplication(ctx context.Context, id int64, allow func(Application) error) (Dealer, error)
}

// Service reads and changes dealers; reads show the applications of one
// convention.
type Service struct {
	store      Store
	users      usersummary.Source
	convention string
}

// NewService returns the service for convention.
func NewService(store Store, users usersummary.Source, convention string) *Service {
	return &Service{store: store, users: users, convention: convention}
}

// Page is one page of a search (Last is the dealer id the next page starts
// after; More tells whether there is one).
type Page = usersummary.Page[WithUser]

// Search returns one page of dealers in id order, those of userIDs unless
// it is nil, with one call to the users service for the whole page. Dealers
// whose user no longer exists are left out of the page.
func (s *Service) Search(ctx context.Context, userIDs []int64, ks keyset.Seek) (Page, error) {
	if userIDs != nil && len(userIDs) == 0 {
		return Page{Items: []WithUser{}}, nil
	}
	rows, err := s.store.Search(ctx, s.convention, userIDs, ks)
	if err != nil {
		return Page{}, err
	}
	var last int64
	if n := min(len(rows), ks.Limit); n > 0 {
		last = rows[n-1].ID
	}
	p, err := usersummary.JoinPage(ctx, s.users, rows, ks.Limit, UserIDOf, Join)
	if err != nil {
		return Page{}, err
	}
	// The page is keyed by dealer id, not by user id.
	p.Last = last
	return p, nil
}

// Get returns dealer id with its applications of convention (the current
// one when empty), without its user (the admin commands' view).
func (s *Service) Get(ctx context.Context, convention string, id int64) (Dealer, error) {
	return s.store.Get(ctx, s.conventionOr(convention), id)
}

// List returns a page of dealers with their applications of convention (the
// current one when empty), without users (the admin commands' view).
func (s *Service) List(ctx context.Context, convention string, ks keyset.Seek) ([]Dealer, error) {
	return s.store.Search(ctx, s.conventionOr(convention), nil, ks)
}

// UserIDOf is the user who created d.
func UserIDOf(d Dealer) int64 { return d.UserID }

// Join is d with the summary of its user.
func Join(d Dealer, u usersclient.UserSummary) WithUser { return WithUser{Dealer: d, User: u} }

func (s *Service) conventionOr(c string) string {
	if c != "" {
		return c
	}
	return s.convention
}
