package volunteer

import (
	"context"
	"slices"
	"strings"

	"github.com/eventreg/eventreg/libs/eventoption"
	"github.com/eventreg/eventreg/libs/fixture"
)

// FromFixture validates the departments and volunteers sections of a fixture
// for convention. knownDepartments are the ids already stored: a volunteer
// may choose those and the file's. Every problem names the record and field,
// and any problem rejects both sections.
func FromFixture(convention string, deps []fixture.Department, vols []fixture.Volunteer, knownDepartments []int64) ([]Department, []Volunteer, error) {
	var problems fixture.Problems
	if len(vols) > 0 && strings.TrimSpace(convention) == "" {
		problems.Addf("conventionId: the file has none and CONVENTION_ID is not set")
	}
	exists := make(map[int64]bool, len(deps)+len(knownDepartments))
	for _, id := range knownDepartments {
		exists[id] = true
	}
	outDeps := make([]Department, 0, len(deps))
	depKeys := fixture.NewKeys("departments", "id")
	for i, d := range deps {
		where := depKeys.Check(&problems, i, d.ID)
		exists[d.ID] = true
		if strings.TrimSpace(d.Name) == "" {
			problems.Addf("%s: name must not be empty", where)
		}
		if !strings.Contains(d.Email, "@") {
			problems.Addf("%s: email must be an email address", where)
		}
		leads := make([]int64, 0, len(d.Leads))
		for k, id := range d.Leads {
			switch {
			case id < 1:
				problems.Addf("%s: leads[%d] must be a positive user id", where, k)
			case slices.Contains(leads, id):
				problems.Addf("%s: leads[%d] (%d) appears twice", where, k, id)
			default:
				leads = append(leads, id)
			}
		}
		outDeps = append(outDeps, Department{ID: d.ID, Name: d.Name, Email: d.Email, PubliclyVisible: d.PubliclyVisible, Leads: leads})
	}
	outVols := make([]Volunteer, 0, len(vols))
	volKeys := fixture.NewKeys("volunteers", "userId")
	for i, v := range vols {
		where := volKeys.Check(&problems, i, v.UserID)
		contacts := make([]ContactMethod, 0, len(v.ContactMethods))
		for k, c := range v.ContactMethods {
			if strings.TrimSpace(c.Name) == "" {
				problems.Addf("%s: contactMethods[%d].name must not be empty", where, k)
			}
			if strings.TrimSpace(c.Value) == "" {
				problems.Addf("%s: contactMethods[%d].value must not be empty", where, k)
			}
			contacts = append(contacts, ContactMethod{Name: c.Name, IsPrimary: c.IsPrimary, Value: c.Value})
		}
		choices := make([]Choice, 0, len(v.Departments))
		chosen := map[int64]bool{}
		for k, d := range v.Departments {
			switch {
			case !exists[d.ID]:
				problems.Addf("%s: departments[%d].id %d is not a department of the file or the database", where, k, d.ID)
			case chosen[d.ID]:
				problems.Addf("%s: departments[%d].id %d appears twice", where, k, d.ID)
			}
			chosen[d.ID] = true
			if len(d.States) == 0 {
				problems.Addf("%s: departments[%d].states must not be empty", where, k)
			}
			for s, st := range d.States {
				if !slices.Contains(States, st) {
					problems.Addf("%s: departments[%d].states[%d] must be one of %s (got %q)", where, k, s, strings.Join(States, ", "), st)
				} else if slices.Index(d.States, st) != s {
					problems.Addf("%s: departments[%d].states[%d] (%s) appears twice", where, k, s, st)
				}
			}
			choices = append(choices, Choice{DepartmentID: d.ID, States: d.States})
		}
		opts, err := eventoption.ParseAll(v.Options, eventoption.AnyType)
		if err != nil {
			problems.Addf("%s: %v", where, err)
		}
		outVols = append(outVols, Volunteer{ConventionID: convention, UserID: v.UserID, ContactMethods: contacts, Choices: choices, Options: opts})
	}
	if err := problems.Err(); err != nil {
		return nil, nil, err
	}
	return outDeps, outVols, nil
}

// ImportResult counts what an import did.
type ImportResult struct {
	DepartmentsInserted, DepartmentsUpdated, DepartmentsUnchanged int64
	Inserted, Updated, Unchanged                                  int64
}

// ImportStore is what Import needs of the store (volunteerdb.Store).
type ImportStore interface {
	// DepartmentIDs returns the ids of the stored departments.
	DepartmentIDs(ctx context.Context) ([]int64, error)
	// Import stores validated departments and volunteers in one
	// transaction, with their events.
	Import(ctx context.Context, deps []Department, vols []Volunteer) (ImportResult, error)
}

// Import loads the departments and volunteers of doc, for the convention
// doc names or else for convention, all or nothing: the one fixture import,
// which `volunteers import` and the tests run. It returns the convention
// used.
func Import(ctx context.Context, st ImportStore, doc *fixture.Document, convention string) (string, ImportResult, error) {
	if doc.ConventionID != "" {
		convention = doc.ConventionID
	}
	known, err := st.DepartmentIDs(ctx)
	if err != nil {
		return convention, ImportResult{}, err
	}
	deps, vols, err := FromFixture(convention, doc.Departments, doc.Volunteers, known)
	if err != nil {
		return convention, ImportResult{}, err
	}
	res, err := st.Import(ctx, deps, vols)
	return convention, res, err
}
