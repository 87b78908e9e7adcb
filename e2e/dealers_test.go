package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

// TestDealersThroughTheGateway drives the dealers service through the
// gateway with the real auth and users services and the demo fixture: a real
// client-credentials token pages through every demo dealer, and an operator's
// status change reaches the app's webhook rendered as the search renders the
// dealer.
func TestDealersThroughTheGateway(t *testing.T) {
	s := startWithWebhooks(t, nil)
	desk := serviceToken(t, s, dealerDeskID, dealerDeskSecret, "vendor:read", "webhook:manage")
	// search posts a dealer search, checking the answer against the API document.
	search := func(t *testing.T, token, body string) (int, []byte) {
		t.Helper()
		r := sendChecked(t, s, http.MethodPost, "/api/v0/dealers/search", token, body)
		return r.status, []byte(r.body)
	}
	type application struct {
		ID, Status  string
		TableNumber *string
		TableType   struct {
			ID   string
			Paid bool
		}
		DealerArea struct{ ID, Name string }
	}
	type dealer struct {
		ID, Name, AddressCountry string
		User                     struct{ ID, Username string }
		Options                  []struct{ ID, Name, Type string }
		Applications             []application
	}
	type page struct {
		Data     []dealer
		NextPage *string
		HasMore  bool
	}

	t.Run("a client-credentials app pages through every demo dealer on hasMore", func(t *testing.T) {
		var all []dealer
		next, pages := "", 0
		for {
			body := `{"limit": 2}`
			if next != "" {
				body = `{"limit": 2, "nextPage": "` + next + `"}`
			}
			status, b := search(t, desk, body)
			var p page
			if err := json.Unmarshal(b, &p); status != 200 || err != nil {
				t.Fatalf("page %d: %d %s", pages, status, b)
			}
			pages++
			all = append(all, p.Data...)
			if !p.HasMore {
				if p.NextPage != nil {
					t.Fatalf("last page with a cursor: %s", b)
				}
				break
			}
			if p.NextPage == nil || pages > 10 {
				t.Fatalf("hasMore without a cursor, or no end: %s", b)
			}
			next = *p.NextPage
		}
		var ids []string
		for _, d := range all {
			ids = append(ids, d.ID+"@"+d.User.Username)
		}
		if pages != 3 || strings.Join(ids, ",") != "1@alice,2@bob,3@carol,4@erin,5@erin" {
			t.Fatalf("%d pages: %v", pages, ids)
		}
		carol := all[2]
		if carol.AddressCountry != "AT" || len(carol.Applications) != 2 ||
			carol.Applications[0].Status != "waitlisted" || carol.Applications[0].DealerArea.Name != "Artist Alley" ||
			carol.Applications[1].Status != "rejected" || carol.Applications[1].DealerArea.Name != "Dealers' Den" {
			t.Fatalf("dealer 3: %+v", carol)
		}
		inkwell := all[0]
		if len(inkwell.Options) != 3 || inkwell.Options[1].Type != "phone" || inkwell.Applications[0].TableNumber == nil ||
			*inkwell.Applications[0].TableNumber != "D-12" || !inkwell.Applications[0].TableType.Paid {
			t.Fatalf("dealer 1: %+v", inkwell)
		}
	})
	t.Run("filter.userIds takes strings and numbers", func(t *testing.T) {
		status, b := search(t, desk, `{"filter": {"userIds": ["1005", 1002, "1004"]}}`)
		var p page
		_ = json.Unmarshal(b, &p)
		if status != 200 || len(p.Data) != 3 || p.Data[0].ID != "2" || p.Data[1].ID != "4" || p.Data[2].ID != "5" || p.HasMore {
			t.Fatalf("%d %s", status, b)
		}
	})
	t.Run("refusals through the gateway", func(t *testing.T) {
		ids := make([]string, 101)
		for i := range ids {
			ids[i] = fmt.Sprint(i + 1)
		}
		reader := serviceToken(t, s, readerID, readerSecret, "registration:read")
		for _, tc := range []struct {
			name, token, body, category string
			status                      int
		}{
			{"no token", "", `{}`, "authentication", 401},
			{"a token without vendor:read", reader, `{}`, "access", 403},
			{"101 user ids", desk, `{"filter": {"userIds": [` + strings.Join(ids, ",") + `]}}`, "validation", 400},
			{"a forged cursor", desk, `{"nextPage": "eyJsYXN0SWQiOjEwMDB9"}`, "validation", 400},
			{"a limit that is not a number", desk, `{"limit": "lots"}`, "validation", 400},
		} {
			status, b := search(t, tc.token, tc.body)
			if status != tc.status || !strings.Contains(string(b), `"`+tc.category+`"`) {
				t.Errorf("%s: %d %s", tc.name, status, b)
			}
		}
	})

	t.Run("an operator's status change reaches the app's webhook as the search renders the dealer", func(t *testing.T) {
		recv := startWebhookReceiver(t, s.GatewayURL, s.Issuer)
		waitForEmptyOutboxes(t, s) // the demo import's events reach auth before the app subscribes
		if r := subscribe(t, s, desk, recv.URL(dealerDeskID), []string{"dealer-updated"}); r.status != http.StatusCreated {
			t.Fatalf("subscribe: %d %s", r.status, r.body)
		}
		// A refused change commits no event.
		if out, err := s.Services["dealers"].Run(context.Background(), nil, "set-status", "101", "pending"); err == nil ||
			!strings.Contains(err.Error(), "CannotChangeDealerStatus") {
			t.Fatalf("approved → pending: %v %s", err, out)
		}
		s.Command(t, "dealers", "set-status", "102", "approved")
		got := recv.waitForEvent(t, dealerDeskID, "dealer-updated")
		_, b := search(t, desk, `{"filter": {"userIds": [1002]}}`)
		var p struct{ Data []json.RawMessage }
		if err := json.Unmarshal(b, &p); err != nil || len(p.Data) != 1 {
			t.Fatalf("search: %s", b)
		}
		if diff := testkit.JSONDiff(p.Data[0], got.Data); diff != "" || !strings.Contains(string(got.Data), `"status":"approved"`) {
			t.Fatalf("the delivery is not the dealer as the search renders it (-search +delivered):\n%s", diff)
		}
		time.Sleep(500 * time.Millisecond)
		if n := len(recv.deliveries()); n != 1 {
			t.Fatalf("%d deliveries, want the one change's", n)
		}
	})
}
