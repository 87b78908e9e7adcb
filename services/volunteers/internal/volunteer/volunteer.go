// Package volunteer is the business layer of volunteers and departments: reading them with their users' summaries, the volunteer status the users service asks for, and validating fixture data.
package volunteer

import (
	"context"
	"errors"
	"time"

	"github.com/eventreg/eventreg/libs/coalesce"
	"github.com/eventreg/eventreg/libs/eventoption"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/libs/usersummary"
)

// ErrNotFound is returned when the user has no volunteer record in the
// convention (or the user no longer exists).
var ErrNotFound = errors.New("volunteer not found")

// States a volunteer can have towards a department.
var States = []string{"experience", "interest", "avoid", "assignment", "request"}

// ContactMethod is one way to reach a volunteer.
type ContactMethod struct {
	Name      string `json:"name"`
	IsPrimary bool   `json:"isPrimary"`
	Value     string `json:"value"`
}

// Choice is a volunteer's relation to a department as stored.
type Choice struct {
	DepartmentID int64    `json:"id"`
	States       []string `json:"states"`
}

// Assignment is a choice with the department's name, as read.
type Assignment struct {
	DepartmentID int64    `json:"id"`
	Name         string   `json:"name"`
	States       []string `json:"states"`
}

// Volunteer is one user's volunteer application for one convention. Read,
// it is also the payload of the volunteer's events (its JSON form is a
// storage format: events written by one release are rendered by the next).
type Volunteer struct {
	ConventionID   string               `json:"conventionId"`
	UserID         int64                `json:"userId"`
	ContactMethods []ContactMethod      `json:"contactMethods"`
	Choices        []Choice             `json:"-"`           // written
	Departments    []Assignment         `json:"departments"` // read
	Options        []eventoption.Option `json:"options"`
	CreatedAt      time.Time            `json:"createdAt"`
	UpdatedAt      time.Time            `json:"updatedAt"`
}

// Department is a volunteer department of the organization.
type Department struct {
	ID              int64
	Name            string
	Email           string
	PubliclyVisible bool
	Leads           []int64
}

// Status is what the users service asks about a user.
type Status struct {
	IsVolunteer      bool
	IsDepartmentLead bool
}

// WithUser is a volunteer and the summary of its user.
type WithUser struct {
	Volunteer
	User usersclient.UserSummary
}

// DepartmentWithLeads is a department and its leads' summaries.
type DepartmentWithLeads struct {
	Department
	LeadSummaries []usersclient.UserSummary
}

// Store is what the business layer needs from storage.
type Store interface {
	// Get returns ErrNotFound when there is none.
	Get(ctx context.Context, conventionID string, userID int64) (Volunteer, error)
	// Search returns up to ks.Limit+1 volunteers with user id > ks.After in user id order.
	Search(ctx context.Context, conventionID string, ks keyset.Seek) ([]Volunteer, error)
	// Departments returns every department in id order.
	Departments(ctx context.Context) ([]Department, error)
	// StatusBy tells, for each of userIDs, whether the user volunteers in the
	// convention and leads a department (every id is in the map).
	StatusBy(ctx context.Context, conventionID string, userIDs []int64) (map[int64]Status, error)
}

// Service reads volunteers of one convention.
type Service struct {
	store      Store
	users      usersummary.Source
	convention string
	// statusOf coalesces concurrent Status lookups into one StatusBy query
	// (as the users service does for its single-user reads, decision 0075):
	// the users service asks one per GET /api/users/current.
	statusOf *coalesce.Loader[int64, Status]
	// departments coalesces concurrent department lists: every request
	// queued while a list is being read shares the next read (one query and
	// one users-service call), which starts after it arrived, so an answer
	// never predates a change that finished before the request.
	departments *coalesce.Loader[struct{}, []DepartmentWithLeads]
}

// NewService returns the service for convention.
func NewService(store Store, users usersummary.Source, convention string) *Service {
	s := &Service{store: store, users: users, convention: convention}
	s.statusOf = coalesce.New(func(ctx context.Context, ids []int64) (map[int64]Status, error) {
		return store.StatusBy(ctx, convention, ids)
	}, coalesce.KeyLookups)
	s.departments = coalesce.New(func(ctx context.Context, _ []struct{}) (map[struct{}][]DepartmentWithLeads, error) {
		deps, err := s.readDepartments(ctx)
		if err != nil {
			return nil, err
		}
		return map[struct{}][]DepartmentWithLeads{{}: deps}, nil
	}, coalesce.KeyLookups)
	return s
}

// Get returns the user's volunteer record in the current convention.
func (s *Service) Get(ctx context.Context, userID int64) (WithUser, error) {
	v, err := s.store.Get(ctx, s.convention, userID)
	if err != nil {
		return WithUser{}, err
	}
	return usersummary.Attach(ctx, s.users, userID, v, ErrNotFound, Join)
}

// Page is one page of a search (Last is the user id the next page starts
// after; More tells whether there is one).
type Page = usersummary.Page[WithUser]

// Search returns one page of volunteers in user id order with one call to the
// users service for the whole page. Volunteers whose user no longer exists are
// left out (as Get answers 404 for them).
func (s *Service) Search(ctx context.Context, ks keyset.Seek) (Page, error) {
	rows, err := s.store.Search(ctx, s.convention, ks)
	if err != nil {
		return Page{}, err
	}
	return usersummary.JoinPage(ctx, s.users, rows, ks.Limit, UserIDOf, Join)
}

// UserIDOf is the user of v.
func UserIDOf(v Volunteer) int64 { return v.UserID }

// Join is v with the summary of its user.
func Join(v Volunteer, u usersclient.UserSummary) WithUser { return WithUser{Volunteer: v, User: u} }

// Departments returns every department with its leads' summaries, fetched in
// one batch (leads the users service does not know are left out). Concurrent
// calls share reads, so the list returned is shared: callers must not modify
// it.
func (s *Service) Departments(ctx context.Context) ([]DepartmentWithLeads, error) {
	deps, _, err := s.departments.Load(ctx, struct{}{})
	return deps, err
}

func (s *Service) readDepartments(ctx context.Context) ([]DepartmentWithLeads, error) {
	deps, err := s.store.Departments(ctx)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, d := range deps {
		ids = append(ids, d.Leads...)
	}
	users, err := usersummary.Fetch(ctx, s.users, ids)
	if err != nil {
		return nil, err
	}
	out := make([]DepartmentWithLeads, len(deps))
	for i, d := range deps {
		out[i] = DepartmentWithLeads{Department: d, LeadSummaries: []usersclient.UserSummary{}}
		for _, id := range d.Leads {
			if u, ok := users[id]; ok {
				out[i].LeadSummaries = append(out[i].LeadSummaries, u)
			}
		}
	}
	return out, nil
}

// Status tells the users service whether the user volunteers in the current
// convention and leads a department; an unknown user is neither.
// Concurrent lookups share queries.
func (s *Service) Status(ctx context.Context, userID int64) (Status, error) {
	st, _, err := s.statusOf.Load(ctx, userID)
	return st, err
}
