package dealer_test

import (
	"strings"
	"testing"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
)

// FuzzFromFixture decodes arbitrary fixture documents and validates their
// dealers section: never a panic; either every dealer comes back with every
// application or the section is rejected with problems naming the records.
func FuzzFromFixture(f *testing.F) {
	for _, s := range []string{`{}`,
		`{"conventionId":"2026","dealers":[{"id":1,"userId":1001,"name":"Ink","addressLine1":"1 Main","addressCity":"S","addressZipcode":"1","addressState":"IL","addressCountry":"US","options":[{"id":1,"name":"P","type":"phone","value":"+1"}],"applications":[{"id":10,"status":"pending","tableType":{"id":"3","name":"t","paid":true},"dealerArea":{"id":1,"name":"Den"},"dealerRequestTypes":[{"id":"4","name":"c","paid":false}]}]}]}`,
		`{"dealers":[{"id":1,"userId":0,"addressCountry":"usa"},{"id":1,"applications":[{"id":2,"status":"x","dealerArea":{"id":1,"name":"a"}},{"id":2,"dealerArea":{"id":1,"name":"b"}}]}]}`,
		`{"dealers":[{"id":5,"userId":5,"name":"n","addressLine1":"a","addressCity":"c","addressCountry":"DE","options":[{"id":1,"name":"m","type":"multi","value":[1]}]}]}`,
	} {
		f.Add(s, "2026")
	}
	f.Fuzz(func(t *testing.T, doc, convention string) {
		d, err := fixture.Decode(strings.NewReader(doc))
		if err != nil {
			return
		}
		out, err := dealer.FromFixture(convention, d.Dealers)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a rejection without problems")
			}
			return
		}
		if len(out) != len(d.Dealers) {
			t.Fatalf("%d dealers in, %d out", len(d.Dealers), len(out))
		}
		for i := range out {
			if len(out[i].Applications) != len(d.Dealers[i].Applications) {
				t.Fatalf("dealer %d: %d applications in, %d out", i, len(d.Dealers[i].Applications), len(out[i].Applications))
			}
		}
	})
}
