// Package registration is the business layer of registrations: reading them with their users' summaries, operators' status and payment changes, and validating fixture data.
package registration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/usersummary"
)

// Statuses of a registration.
const (
	StatusPaid   = "paid"
	StatusUnpaid = "unpaid"
)

// ErrNotFound is returned when the user has no registration in the convention
// (or the user no longer exists).
var ErrNotFound = errors.New("registration not found")

// ErrInvalid wraps a refused change (a bad status or order id).
var ErrInvalid = errors.New("invalid change")

// Flag marks a registration (e.g. VIP).
type Flag struct {
	ID        string `json:"id"`
	ShortName string `json:"shortName"`
}

// Registration is one user's registration for one convention. Read, it is
// also the payload of its events (its JSON form is a storage format: events
// written by one release are rendered by the next).
type Registration struct {
	ConventionID       string  `json:"conventionId"`
	UserID             int64   `json:"userId"`
	BadgeName          string  `json:"badgeName"`
	Status             string  `json:"status"`
	OrderID            *string `json:"orderId"`
	ProductID          string  `json:"productId"`
	ProductName        string  `json:"productName"`
	ProductDisplayName *string `json:"productDisplayName"`
	// Options and Flags are JSON arrays of eventoption.Option and Flag as
	// the database stores them: rendered as they are, never decoded on the
	// way out (FromFixture builds them; see decision 0078).
	Options   json.RawMessage `json:"options"`
	Flags     json.RawMessage `json:"flags"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// WithUser is a registration and the summary of its user.
type WithUser struct {
	Registration
	User usersclient.UserSummary
}

// Store is what the business layer needs from storage.
type Store interface {
	// Get returns ErrNotFound when there is none.
	Get(ctx context.Context, conventionID string, userID int64) (Registration, error)
	// Search returns up to ks.Limit+1 registrations with user id > ks.After
	// in user id order, only those of userIDs unless it is nil.
	Search(ctx context.Context, conventionID string, userIDs []int64, ks keyset.Seek) ([]Registration, error)
	// SetStatus changes the status (and updatedAt when it changes); ErrNotFound when there is none.
	SetStatus(ctx context.Context, conventionID string, userID int64, status string) (Registration, error)
	// RecordPayment marks the registration paid by orderID; ErrNotFound when there is none.
	RecordPayment(ctx context.Context, conventionID string, userID int64, orderID string) (Registration, error)
	// Ordered returns the user's registrations that carry an order, in every
	// convention, oldest first.
	Ordered(ctx context.Context, userID int64) ([]Registration, error)
}

// Service reads and changes registrations of one convention.
type Service struct {
	store      Store
	users      usersummary.Source
	convention string
}

// NewService returns the service for convention.
func NewService(store Store, users usersummary.Source, convention string) *Service {
	return &Service{store: store, users: users, convention: convention}
}

// Get returns the user's registration in the current convention.
func (s *Service) Get(ctx context.Context, userID int64) (WithUser, error) {
	r, err := s.store.Get(ctx, s.convention, userID)
	if err != nil {
		return WithUser{}, err
	}
	return usersummary.Attach(ctx, s.users, userID, r, ErrNotFound, Join)
}

// Page is one page of a search (Last is the user id the next page starts
// after; More tells whether there is one).
type Page = usersummary.Page[WithUser]

// Search returns one page of registrations in user id order, those of
// userIDs unless it is nil, with one call to the users service for the whole
// page. Registrations whose user no longer exists are left out (as Get
// answers 404 for them).
func (s *Service) Search(ctx context.Context, userIDs []int64, ks keyset.Seek) (Page, error) {
	if userIDs != nil && len(userIDs) == 0 {
		return Page{Items: []WithUser{}}, nil
	}
	rows, err := s.store.Search(ctx, s.convention, userIDs, ks)
	if err != nil {
		return Page{}, err
	}
	return usersummary.JoinPage(ctx, s.users, rows, ks.Limit, UserIDOf, Join)
}

// UserIDOf is the user of r.
func UserIDOf(r Registration) int64 { return r.UserID }

// Order is what a user bought: today the registration an order paid, in
// any convention (the order's amounts are not kept by this service).
type Order struct {
	ID           string
	ConventionID string
	Status       string
	Items        []Item
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Item is one product of an order.
type Item struct {
	ProductID          string
	ProductName        string
	ProductDisplayName *string
}

// Orders returns the user's orders, oldest first; none is an empty list
// (the users service is not asked whether the user exists).
func (s *Service) Orders(ctx context.Context, userID int64) ([]Order, error) {
	regs, err := s.store.Ordered(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]Order, 0, len(regs))
	for _, r := range regs {
		if r.OrderID == nil {
			continue
		}
		out = append(out, Order{ID: *r.OrderID, ConventionID: r.ConventionID, Status: r.Status,
			Items:     []Item{{ProductID: r.ProductID, ProductName: r.ProductName, ProductDisplayName: r.ProductDisplayName}},
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
	}
	return out, nil
}

// Join is r with the summary of its user.
func Join(r Registration, u usersclient.UserSummary) WithUser {
	return WithUser{Registration: r, User: u}
}

// SetStatus sets the status of the user's registration in convention (the
// current one when empty).
func (s *Service) SetStatus(ctx context.Context, convention string, userID int64, status string) (Registration, error) {
	if status != StatusPaid && status != StatusUnpaid {
		return Registration{}, fmt.Errorf("%w: status must be paid or unpaid (got %q)", ErrInvalid, status)
	}
	return s.store.SetStatus(ctx, s.conventionOr(convention), userID, status)
}

// RecordPayment records that orderID paid the user's registration: the
// registration becomes paid and carries the order.
func (s *Service) RecordPayment(ctx context.Context, convention string, userID int64, orderID string) (Registration, error) {
	orderID = strings.TrimSpace(orderID)
	if orderID == "" {
		return Registration{}, fmt.Errorf("%w: the order id must not be empty", ErrInvalid)
	}
	return s.store.RecordPayment(ctx, s.conventionOr(convention), userID, orderID)
}

func (s *Service) conventionOr(c string) string {
	if c != "" {
		return c
	}
	return s.convention
}
