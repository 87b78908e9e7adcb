package registration_test

import (
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// FuzzFromFixture decodes arbitrary fixture documents and validates their
// registrations section: never a panic; either every record comes back or
// the section is rejected with problems naming the records.
func FuzzFromFixture(f *testing.F) {
	for _, s := range []string{`{}`, `{"conventionId":"2026","roles":[{"id":1,"name":"admin","permissions":["user:read"]}],"users":[{"id":1001,"username":"alice","email":"a@example.org","emailVerified":true,"identityVerified":true,"firstName":"A","lastName":"L","bornAt":"1990-01-01","newsletter":false,"password":"correct horse","roles":[{"id":1,"scope":"global"}]}],"departments":[{"id":1,"name":"Ops"}],"volunteers":[{"userId":1001,"departments":[1]}],"registrations":[{"userId":1001,"badgeName":"Al","status":"paid","orderId":"7","productId":"5","productName":"Attendee","options":[{"name":"Days","type":"multi","value":["Fri"]}]}]}`, `{"registrations":[{"userId":1,"status":"x"},{"userId":1}]}`, `{"volunteers":[{"userId":0,"departments":[99]}],"departments":[{"id":-1}]}`, `{"users":[{"id":1,"username":""},{"id":1,"username":"a"}],"roles":[{"id":1,"name":""}]}`} {
		f.Add(s, "2026")
	}
	f.Fuzz(func(t *testing.T, doc, convention string) {
		d, err := fixture.Decode(strings.NewReader(doc))
		if err != nil {
			return
		}
		out, err := registration.FromFixture(convention, d.Registrations)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a rejection without problems")
			}
			return
		}
		if len(out) != len(d.Registrations) {
			t.Fatalf("%d records in, %d out", len(d.Registrations), len(out))
		}
	})
}
