package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/eventreg/eventreg/e2e/stack"
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
// peer pod would, with the Authorization header auth (none when empty), and
// returns the status and body.
func callInternal(t *testing.T, s *stack.Stack, c internalCall, auth string) (int, []byte) {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = bytes.NewReader([]byte(c.body))
	}
	req, err := http.NewRequest(c.method, s.Services[c.service].InternalURL+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// wantRefused fails t unless the answer is the API's 401 (docs/api.md,
// "Errors"): {"errors": {"authentication": {"code": 2000|2001, "message": ...}}}.
func wantRefused(t *testing.T, c internalCall, how string, status int, body []byte) {
	t.Helper()
	var shape struct {
		Errors struct {
			Authentication *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"authentication"`
		} `json:"errors"`
	}
	if status != http.StatusUnauthorized || json.Unmarshal(body, &shape) != nil || shape.Errors.Authentication == nil ||
		shape.Errors.Authentication.Code == 0 || shape.Errors.Authentication.Message == "" {
		t.Errorf("%s %s %s on %s's internal listener: %d %s, want 401 in the API's error shape", how, c.method, c.path, c.service, status, body)
	}
}

// get GETs url and returns the status and body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}
