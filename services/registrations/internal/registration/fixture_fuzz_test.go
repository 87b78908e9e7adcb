package registration_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// FuzzFromFixture validates the registrations section of arbitrary fixture
// documents: never a panic; either every record comes back or the section is
// rejected with problems naming the records.
func FuzzFromFixture(f *testing.F) {
	resourcetest.FuzzFixtureSection(f, func(convention string, d *fixture.Document) (int, int, error) {
		out, err := registration.FromFixture(convention, d.Registrations)
		return len(d.Registrations), len(out), err
	})
}
