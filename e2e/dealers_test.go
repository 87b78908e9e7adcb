package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/apispec"
)

// The demo app approved for vendor:read (deploy/fixtures/demo.json).
const (
	dealerDeskID     = "505"
	dealerDeskSecret = "a-fifth-long-random-demo-secret-of-32-chars"
)

// TestDealers drives the dealers service through the gateway with the real
// auth and users services and the demo fixture: a real client-credentials
// token pages through every demo dealer, and an operator's status change
// reaches the app's webhook rendered as the search renders the dealer.
func TestDealers(t *testing.T) {
	s := stack.Start(t, stack.Options{Env: map[string]string{
		"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
		"WEBHOOK_RETRY_BASE":       "100ms",
		"WEBHOOK_POLL_INTERVAL":    "250ms",
	}})
	gw, hc, ctx := s.GatewayURL, s.HTTPClient(), context.Background()
	spec, err := apispec.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := clientCredentials(gw, dealerDeskID, dealerDeskSecret, oauth2.AuthStyleInHeader, "vendor:read", "webhook:manage").Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	desk := tok.AccessToken
	search := func(t *testing.T, token, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, gw+"/api/v0/dealers/search", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		req.Body = io.NopCloser(strings.NewReader(body))
		if err := spec.ValidateHTTPResponse(resp); err != nil {
			t.Errorf("response breaks the API document: %v", err)
		}
		return resp.StatusCode, b
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
		recv := startWebhookReceiver(t, gw, s.Issuer)
		waitForEmptyOutboxes(t, s) // the demo import's events reach auth before the app subscribes
		if r := subscribe(t, s, desk, recv.URL(dealerDeskID), []string{"dealer-updated"}); r.status != http.StatusCreated {
			t.Fatalf("subscribe: %d %s", r.status, r.body)
		}
		// A refused change commits no event.
		if out, err := s.Services["dealers"].Run(ctx, nil, "set-status", "101", "pending"); err == nil || !strings.Contains(err.Error(), "CannotChangeDealerStatus") {
			t.Fatalf("approved → pending: %v %s", err, out)
		}
		s.Command(t, "dealers", "set-status", "102", "approved")
		var got webhookDelivery
		eventually(t, 45*time.Second, "the dealer-updated delivery", func() error {
			for _, d := range recv.deliveries() {
				if d.App == dealerDeskID && d.Event == "dealer-updated" {
					got = d
					return nil
				}
			}
			return fmt.Errorf("no delivery yet (%d in all)", len(recv.deliveries()))
		})
		_, b := search(t, desk, `{"filter": {"userIds": [1002]}}`)
		var p struct{ Data []json.RawMessage }
		if err := json.Unmarshal(b, &p); err != nil || len(p.Data) != 1 {
			t.Fatalf("search: %s", b)
		}
		if !sameJSON(got.Data, p.Data[0]) || !strings.Contains(string(got.Data), `"status":"approved"`) {
			t.Fatalf("delivered %s\nthe search renders %s", got.Data, p.Data[0])
		}
		time.Sleep(500 * time.Millisecond)
		if n := len(recv.deliveries()); n != 1 {
			t.Fatalf("%d deliveries, want the one change's", n)
		}
	})
}
