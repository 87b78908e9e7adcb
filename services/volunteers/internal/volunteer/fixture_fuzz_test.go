package volunteer_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// FuzzFromFixture validates the departments and volunteers of arbitrary
// fixture documents: never a panic; either every record comes back or both
// sections are rejected with problems naming the records.
func FuzzFromFixture(f *testing.F) {
	resourcetest.FuzzFixtureSection(f, func(convention string, d *fixture.Document) (int, int, error) {
		deps, vols, err := volunteer.FromFixture(convention, d.Departments, d.Volunteers, []int64{1, 2})
		return len(d.Departments) + len(d.Volunteers), len(deps) + len(vols), err
	})
}
