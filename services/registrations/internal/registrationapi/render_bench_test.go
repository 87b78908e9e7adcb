package registrationapi

import (
	"encoding/json"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
)

// BenchmarkRenderSearchPage is the JSON rendering of a full search page: 100
// registrations with their options, flags, order and user summary, converted
// and encoded as the search handler does.
//
//	go test ./services/registrations/internal/registrationapi -run '^$' -bench RenderSearchPage -benchmem
func BenchmarkRenderSearchPage(b *testing.B) {
	items := make([]registration.WithUser, 100)
	options := json.RawMessage(`[{"name": "Days", "type": "multi", "value": ["Fri", "Sat"]}, {"name": "Shirt size", "type": "select", "value": "M"}, {"name": "Dinner guests", "type": "number", "value": 1}]`)
	flags := json.RawMessage(`[{"id": "3", "shortName": "VIP"}]`)
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	display := "Attendee Weekend"
	for i := range items {
		id := int64(10_000_001 + i)
		order := "G" + strconv.FormatInt(100000+int64(i), 10)
		phone := "+15550000" + strconv.Itoa(100+i)
		items[i] = registration.WithUser{
			Registration: registration.Registration{ConventionID: "2026", UserID: id, BadgeName: "Badge " + strconv.FormatInt(id, 10), Status: "paid",
				OrderID: &order, ProductID: "5", ProductName: "Attendee", ProductDisplayName: &display,
				// As the database sends them (jsonb's text: a space after each : and ,).
				Options:   options,
				Flags:     flags,
				CreatedAt: created, UpdatedAt: created.Add(time.Duration(i) * time.Minute)},
			User: usersclient.UserSummary{ID: strconv.FormatInt(id, 10), FirstName: "Alex", LastName: "Müller", Username: "gen" + strconv.FormatInt(id, 10),
				Phone: &phone, Email: "gen" + strconv.FormatInt(id, 10) + "@example.invalid"},
		}
	}
	next := "AQAAAAAAmJaAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	b.ReportAllocs()
	for b.Loop() {
		resp := page.Response[registrationJSON]{Data: make([]registrationJSON, len(items)), HasMore: true, NextPage: &next}
		for i, r := range items {
			resp.Data[i] = toJSON(r)
		}
		if err := json.NewEncoder(io.Discard).Encode(resp); err != nil {
			b.Fatal(err)
		}
	}
}
