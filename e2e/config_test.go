package e2e

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
)

// TestPublicConfiguration reads GET /api/config through the gateway as a
// program listing conventions across instances does: no token, the demo
// fixture's organization and conventions, ISO 8601 timestamps with offsets.
func TestPublicConfiguration(t *testing.T) {
	// A small per-address budget, so that the limit is reached with few requests.
	s := stack.Start(t, stack.Options{Env: map[string]string{"RATE_LIMIT_PER_SECOND": "1", "RATE_LIMIT_BURST": "30"}})
	// get reads the configuration with the Authorization header auth (none
	// when empty), checking the answer against the API document.
	get := func(t *testing.T, auth string) (int, http.Header, []byte) {
		t.Helper()
		req, _ := newRequest(s.GatewayURL, http.MethodGet, "/api/config", "", "")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		r := mustDo(t, s.HTTPClient(), req)
		checkAPIDocument(t, req, r)
		return r.status, r.header, []byte(r.body)
	}
	// What a cross-instance lister reads, and nothing more.
	type lister struct {
		Organization struct {
			Country string `json:"country"`
			Name    string `json:"name"`
		} `json:"organization"`
		Conventions []struct {
			Domain   string `json:"domain"`
			LongName string `json:"longName"`
			StartAt  string `json:"startAt"`
			EndAt    string `json:"endAt"`
			Venue    string `json:"venue"`
		} `json:"conventions"`
	}
	check := func(t *testing.T, status int, body []byte) {
		t.Helper()
		var got lister
		if status != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Fatalf("%d %s", status, body)
		}
		if got.Organization.Country != "US" || got.Organization.Name != "Example Convention Society" || len(got.Conventions) != 2 {
			t.Fatalf("%s", body)
		}
		c := got.Conventions[1]
		if c.Domain != "reg.example.org" || c.LongName != "ExampleCon 2026: Among the Stars" || c.Venue == "" ||
			c.StartAt != "2026-07-02T10:00:00-05:00" || c.EndAt != "2026-07-05T18:00:00-05:00" {
			t.Fatalf("the current convention: %+v", c)
		}
		if got.Conventions[0].Domain != "reg2025.example.org" {
			t.Fatalf("not in start order: %s", body)
		}
		for _, c := range got.Conventions {
			for _, ts := range []string{c.StartAt, c.EndAt} {
				if _, err := time.Parse(time.RFC3339, ts); err != nil {
					t.Errorf("%q is not ISO 8601 with an offset: %v", ts, err)
				}
			}
		}
	}

	t.Run("without a token", func(t *testing.T) {
		status, h, body := get(t, "")
		check(t, status, body)
		if h.Get("RateLimit-Limit") != "30" {
			t.Errorf("no per-address rate limit headers: %v", h)
		}
	})
	t.Run("a garbage bearer token is ignored", func(t *testing.T) {
		status, _, body := get(t, "Bearer this.is-not.a-token")
		check(t, status, body)
	})
	t.Run("a malformed Authorization header is ignored", func(t *testing.T) {
		status, _, body := get(t, "Basic !!!")
		check(t, status, body)
	})
	t.Run("each address is rate-limited, whatever token it sends", func(t *testing.T) {
		var mu sync.Mutex
		codes := map[int]int{}
		var limited []byte
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := newRequest(s.GatewayURL, http.MethodGet, "/api/config", "garbage-"+string(rune('a'+i%26)), "")
				// A forged forwarding header does not give a fresh budget:
				// the gateway replaces it with the real peer.
				req.Header.Set("X-Forwarded-For", "198.51.100."+string(rune('0'+i%10)))
				r, err := do(s.HTTPClient(), req)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				codes[r.status]++
				if r.status == http.StatusTooManyRequests {
					limited = []byte(r.body)
				}
			}()
		}
		wg.Wait()
		if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusOK]+codes[http.StatusTooManyRequests] != 40 {
			t.Fatalf("answers %v: want some 200 and some 429, nothing else", codes)
		}
		var e struct {
			Errors struct {
				RateLimit struct {
					RetryAfter int `json:"retryAfter"`
				} `json:"rateLimit"`
			} `json:"errors"`
		}
		if json.Unmarshal(limited, &e) != nil || e.Errors.RateLimit.RetryAfter < 1 {
			t.Fatalf("429 body %s", limited)
		}
	})
}
