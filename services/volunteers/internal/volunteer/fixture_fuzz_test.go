package volunteer_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/fixture/fixturetest"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// FuzzFromFixture validates the departments and volunteers of arbitrary
// fixture documents: either every record comes back or both sections are
// rejected with problems naming the records.
func FuzzFromFixture(f *testing.F) {
	fixturetest.FuzzSections(f, nil, func(t *testing.T, d *fixture.Document, convention string) error {
		deps, vols, err := volunteer.FromFixture(convention, d.Departments, d.Volunteers, []int64{1, 2})
		if err == nil && (len(deps) != len(d.Departments) || len(vols) != len(d.Volunteers)) {
			t.Fatalf("records lost: %d/%d departments, %d/%d volunteers", len(deps), len(d.Departments), len(vols), len(d.Volunteers))
		}
		return err
	})
}
