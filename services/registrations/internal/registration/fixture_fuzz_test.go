package registration_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/fixture/fixturetest"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// FuzzFromFixture validates the registrations section of arbitrary fixture
// documents: either every record comes back or the section is rejected with
// problems naming the records.
func FuzzFromFixture(f *testing.F) {
	fixturetest.FuzzSections(f, nil, func(t *testing.T, d *fixture.Document, convention string) error {
		out, err := registration.FromFixture(convention, d.Registrations)
		if err == nil && len(out) != len(d.Registrations) {
			t.Fatalf("%d records in, %d out", len(d.Registrations), len(out))
		}
		return err
	})
}
