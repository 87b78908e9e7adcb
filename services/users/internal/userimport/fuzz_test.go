package userimport

import (
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
)

// FuzzBatchOf decodes arbitrary fixture documents and validates their roles
// and users the way the import does: never a panic; a document without
// problems yields every role and user, and a password only for users that
// gave one.
func FuzzBatchOf(f *testing.F) {
	for _, s := range []string{`{}`, `{"conventionId":"2026","roles":[{"id":1,"name":"admin","permissions":["user:read"]}],"users":[{"id":1001,"username":"alice","email":"a@example.org","emailVerified":true,"identityVerified":true,"firstName":"A","lastName":"L","bornAt":"1990-01-01","newsletter":false,"password":"correct horse","roles":[{"id":1,"scope":"global"}]}],"departments":[{"id":1,"name":"Ops"}],"volunteers":[{"userId":1001,"departments":[1]}],"registrations":[{"userId":1001,"badgeName":"Al","status":"paid","orderId":"7","productId":"5","productName":"Attendee","options":[{"name":"Days","type":"multi","value":["Fri"]}]}]}`, `{"registrations":[{"userId":1,"status":"x"},{"userId":1}]}`, `{"volunteers":[{"userId":0,"departments":[99]}],"departments":[{"id":-1}]}`, `{"users":[{"id":1,"username":""},{"id":1,"username":"a"}],"roles":[{"id":1,"name":""}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := fixture.Decode(strings.NewReader(doc))
		if err != nil {
			return
		}
		b, plain, problems := batchOf(d, "2026")
		if len(problems) > 0 {
			return
		}
		if len(b.Roles) != len(d.Roles) || len(b.Users) != len(d.Users) {
			t.Fatalf("records lost: %d/%d roles, %d/%d users", len(b.Roles), len(d.Roles), len(b.Users), len(d.Users))
		}
		for i := range plain {
			if i < 0 || i >= len(d.Users) {
				t.Fatalf("password for user index %d of %d", i, len(d.Users))
			}
		}
	})
}
