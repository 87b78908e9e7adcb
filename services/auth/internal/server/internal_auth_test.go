package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// TestInternalAPINeedsAServiceToken: a peer that reaches auth's internal
// listener without a service token for auth (none, one signed with another
// key, one for another service, an expired one) gets the API's 401 from
// every internal endpoint: it cannot hand auth events to sign and deliver,
// read the revocation feed or revoke anyone's apps. The published keys stay
// open, and the operations routes are on the ops listener only.
func TestInternalAPINeedsAServiceToken(t *testing.T) {
	s := authtest.Start(t, authtest.Options{})
	forged, _ := servicetoken.NewSigner(servicetoken.Config{Key: "not-the-deployment-key-but-just-as-long"}, "users").Token("auth")
	forUsers, _ := s.Peer.Token("users")
	expired, _ := s.Peer.TokenAt("auth", time.Now().Add(-time.Hour))
	event := `{"events":[{"id":"7d0b8f5e-4a43-4c55-9a3c-2f1b6f0e9a01","type":"user-updated","source":"users",` +
		`"resource":"user:1001","data":{"id":"1001"},"occurredAt":"2026-01-01T00:00:00Z"}]}`
	calls := []struct{ method, path, body string }{
		{http.MethodPost, authapi.PathEvents, event},
		{http.MethodGet, authapi.PathRevocations + "?after=0", ""},
		{http.MethodPost, "/internal/users/1001/permissions-changed", ""},
	}
	for name, c := range map[string]struct {
		token, message string
	}{
		"no credentials":                  {"", "Invalid token."},
		"a token signed with another key": {forged, "Invalid token."},
		"a token for another service":     {forUsers, "Invalid token."},
		"an expired token":                {expired, "Token expired."},
	} {
		t.Run(name+" is refused", func(t *testing.T) {
			for _, call := range calls {
				req, _ := http.NewRequest(call.method, s.InternalURL+call.path, strings.NewReader(call.body))
				req.Header.Set("Content-Type", "application/json")
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var shape struct {
					Errors struct {
						Authentication struct {
							Message string `json:"message"`
						} `json:"authentication"`
					} `json:"errors"`
				}
				_ = json.Unmarshal(body, &shape)
				if resp.StatusCode != http.StatusUnauthorized || shape.Errors.Authentication.Message != c.message {
					t.Errorf("%s %s: %d %s", call.method, call.path, resp.StatusCode, body)
				}
			}
			var n int
			if err := s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_events`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("events stored: %d %v", n, err)
			}
		})
	}
	t.Run("a token for auth from a holder of the key is served", func(t *testing.T) {
		resp := s.Internal(t, http.MethodPost, authapi.PathEvents, "application/json", strings.NewReader(event))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
	t.Run("probes and metrics are on the ops listener, not the internal one", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			for base, want := range map[string]int{s.OpsURL: http.StatusOK, s.InternalURL: http.StatusUnauthorized, s.URL: http.StatusNotFound} {
				resp, err := http.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("%s%s: %d, want %d", base, path, resp.StatusCode, want)
				}
			}
		}
	})
}
