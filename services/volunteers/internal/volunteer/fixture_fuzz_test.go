package volunteer_test

import (
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer"
)

// FuzzFromFixture decodes arbitrary fixture documents and validates their
// departments and volunteers: never a panic; either every record comes back
// or both sections are rejected with problems naming the records.
func FuzzFromFixture(f *testing.F) {
	for _, s := range []string{`{}`, `{"conventionId":"2026","roles":[{"id":1,"name":"admin","permissions":["user:read"]}],"users":[{"id":1001,"username":"alice","email":"a@example.org","emailVerified":true,"identityVerified":true,"firstName":"A","lastName":"L","bornAt":"1990-01-01","newsletter":false,"password":"correct horse","roles":[{"id":1,"scope":"global"}]}],"departments":[{"id":1,"name":"Ops"}],"volunteers":[{"userId":1001,"departments":[1]}],"registrations":[{"userId":1001,"badgeName":"Al","status":"paid","orderId":"7","productId":"5","productName":"Attendee","options":[{"name":"Days","type":"multi","value":["Fri"]}]}]}`, `{"registrations":[{"userId":1,"status":"x"},{"userId":1}]}`, `{"volunteers":[{"userId":0,"departments":[99]}],"departments":[{"id":-1}]}`, `{"users":[{"id":1,"username":""},{"id":1,"username":"a"}],"roles":[{"id":1,"name":""}]}`} {
		f.Add(s, "2026")
	}
	f.Fuzz(func(t *testing.T, doc, convention string) {
		d, err := fixture.Decode(strings.NewReader(doc))
		if err != nil {
			return
		}
		deps, vols, err := volunteer.FromFixture(convention, d.Departments, d.Volunteers, []int64{1, 2})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a rejection without problems")
			}
			return
		}
		if len(deps) != len(d.Departments) || len(vols) != len(d.Volunteers) {
			t.Fatalf("records lost: %d/%d departments, %d/%d volunteers", len(deps), len(d.Departments), len(vols), len(d.Volunteers))
		}
	})
}
