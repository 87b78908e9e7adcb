package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/servicetoken"
)

// internalCall is one endpoint of a service's internal API, with a body it
// would accept from a genuine caller.
type internalCall struct {
	service, method, path, body string
}

// internalCalls lists every endpoint of the internal APIs (docs/architecture.md,
// "Services"): what a peer that can reach the internal port would call.
var internalCalls = []internalCall{
	{"users", http.MethodPost, "/internal/credentials/verify", `{"username":"alice","password":"alice demo password 2026"}`},
	{"users", http.MethodPost, "/internal/credentials/account", `{"username":"alice"}`},
	{"users", http.MethodPost, "/internal/users/summaries", `{"ids":[1001,1002,1003]}`},
	{"users", http.MethodGet, "/internal/users/1001/permissions", ""},
	{"auth", http.MethodPost, "/internal/events", `{"events":[{"id":"7d0b8f5e-4a43-4c55-9a3c-2f1b6f0e9a01","type":"user-updated",` +
		`"source":"users","resource":"user:1001","data":{"id":"1001","firstName":"Forged"},"occurredAt":"2026-01-01T00:00:00Z"}]}`},
	{"auth", http.MethodGet, "/internal/revocations?after=0", ""},
	{"auth", http.MethodPost, "/internal/users/1001/permissions-changed", ""},
	{"volunteers", http.MethodGet, "/internal/users/1003/volunteer-status", ""},
}

// callInternal sends c straight to the service's internal listener, as a
// peer pod would, with the Authorization header auth (none when empty).
func callInternal(t *testing.T, s *stack.Stack, c internalCall, auth string) reply {
	t.Helper()
	req, err := newRequest(s.Services[c.service].InternalURL, c.method, c.path, "", c.body)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return mustDo(t, http.DefaultClient, req)
}

// wantRefused fails t unless the answer is the API's 401 (docs/api.md,
// "Errors"): {"errors": {"authentication": {"code": 2000|2001, "message": ...}}}.
func wantRefused(t *testing.T, c internalCall, how string, r reply) {
	t.Helper()
	var shape struct {
		Errors struct {
			Authentication *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"authentication"`
		} `json:"errors"`
	}
	if r.status != http.StatusUnauthorized || json.Unmarshal([]byte(r.body), &shape) != nil || shape.Errors.Authentication == nil ||
		shape.Errors.Authentication.Code == 0 || shape.Errors.Authentication.Message == "" {
		t.Errorf("%s %s %s on %s's internal listener: %d %s, want 401 in the API's error shape", how, c.method, c.path, c.service, r.status, r.body)
	}
}

// TestInternalAPIIsForPeerServicesOnly: a peer that reaches a service's
// internal listener is refused without a service token signed with the
// deployment's key for that service; the internal listener serves no probe
// or metric (the ops listener does); and the gateway routes nothing to the
// internal API.
func TestInternalAPIIsForPeerServicesOnly(t *testing.T) {
	s := stack.Start(t, stack.Options{})
	key := servicetoken.Config{Key: s.InternalAuthKey()}
	peer := servicetoken.NewSigner(key, "auth")

	t.Run("a peer that reaches an internal listener cannot call it without a service token", func(t *testing.T) {
		forger := servicetoken.NewSigner(servicetoken.Config{Key: "a-key-of-the-right-length-but-not-the-deployment's"}, "auth")
		for _, c := range internalCalls {
			other := "users"
			if c.service == "users" {
				other = "volunteers"
			}
			forged, _ := forger.Token(c.service)
			wrongAudience, _ := peer.Token(other)
			expired, _ := peer.TokenAt(c.service, time.Now().Add(-time.Hour))
			for how, auth := range map[string]string{"no credentials:": "", "a token signed with another key:": "Bearer " + forged,
				"a token for " + other + ":": "Bearer " + wrongAudience, "an expired token:": "Bearer " + expired, "Basic credentials:": "Basic YXV0aDphdXRo"} {
				wantRefused(t, c, how, callInternal(t, s, c, auth))
			}
		}
		good, _ := peer.Token("auth")
		if r := callInternal(t, s, internalCall{"auth", http.MethodGet, "/internal/revocations?after=0", ""}, "Bearer "+good); r.status != http.StatusOK {
			t.Fatalf("a genuine service token for auth: %d %s", r.status, r.body)
		}
		for _, c := range internalCalls {
			if c.service != "users" || c.method != http.MethodGet {
				continue
			}
			good, _ := peer.Token("users")
			if r := callInternal(t, s, c, "Bearer "+good); r.status != http.StatusOK {
				t.Fatalf("a genuine service token for users: %s %d %s", c.path, r.status, r.body)
			}
		}
	})

	t.Run("probes and metrics are on the ops listener; the internal listener serves none of them", func(t *testing.T) {
		for _, name := range stack.ServiceNames {
			svc := s.Services[name]
			for _, path := range []string{"/metrics", "/readyz", "/healthz"} {
				ops, _ := newRequest(svc.OpsURL, http.MethodGet, path, "", "")
				if r := mustDo(t, http.DefaultClient, ops); r.status != http.StatusOK {
					t.Errorf("%s ops %s: %d, want 200", name, path, r.status)
				}
				// Without a token the internal listener refuses everything,
				// known route or not; with one, there is no such route.
				internal := internalCall{name, http.MethodGet, path, ""}
				if r := callInternal(t, s, internal, ""); r.status != http.StatusUnauthorized {
					t.Errorf("%s internal %s without a token: %d, want 401", name, path, r.status)
				}
				tok, _ := peer.Token(name)
				if r := callInternal(t, s, internal, "Bearer "+tok); r.status != http.StatusNotFound {
					t.Errorf("%s internal %s with a token: %d, want 404", name, path, r.status)
				}
			}
		}
	})

	t.Run("the internal API is not reachable through the gateway", func(t *testing.T) {
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, "/internal/revocations"},
			{http.MethodPost, "/internal/users/1001/permissions-changed"},
		} {
			if got := mustSend(t, s, r.method, r.path, "", ""); got.status != http.StatusNotFound {
				t.Fatalf("%s %s through the gateway: %d", r.method, r.path, got.status)
			}
		}
	})
}
