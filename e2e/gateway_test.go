package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/apispec"
)

// reply is one answer through the gateway.
type reply struct {
	status int
	header http.Header
	body   string
	took   time.Duration
	// wrote is when the request was fully written to the gateway.
	wrote time.Time
}

// newRequest is a request to base+path with a bearer token (none when token
// is empty) and a JSON body (none when body is empty).
func newRequest(base, method, path, token, body string) (*http.Request, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// newFormRequest posts form to base+path with the app's HTTP Basic
// credentials (none when id is empty), as the token and revocation
// endpoints take them.
func newFormRequest(base, path, id, secret string, form url.Values) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(id, secret)
	}
	return req
}

// do sends req with hc and reads the answer. A transport error is returned,
// never a fatal, so load loops can count them.
func do(hc *http.Client, req *http.Request) (reply, error) {
	var wrote time.Time
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote = time.Now() }}))
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return reply{took: time.Since(start), wrote: wrote}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), took: time.Since(start), wrote: wrote}, err
}

// mustDo is do failing t on a transport error.
func mustDo(t testing.TB, hc *http.Client, req *http.Request) reply {
	t.Helper()
	r, err := do(hc, req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return r
}

// send makes one request through the gateway (see newRequest).
func send(s *stack.Stack, method, path, token, body string) (reply, error) {
	req, err := newRequest(s.GatewayURL, method, path, token, body)
	if err != nil {
		return reply{}, err
	}
	return do(s.HTTPClient(), req)
}

// mustSend is send failing t on a transport error.
func mustSend(t testing.TB, s *stack.Stack, method, path, token, body string) reply {
	t.Helper()
	r, err := send(s, method, path, token, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// sendChecked is mustSend that also checks the answer against the API
// document (libs/apispec): one that breaks it fails t, which goes on.
func sendChecked(t testing.TB, s *stack.Stack, method, path, token, body string) reply {
	t.Helper()
	r := mustSend(t, s, method, path, token, body)
	req, _ := newRequest(s.GatewayURL, method, path, token, body)
	checkAPIDocument(t, req, r)
	return r
}

// apiDocument is the API document's validator, read once per test process.
var apiDocument = sync.OnceValues(apispec.NewValidator)

// checkAPIDocument fails t, which goes on, when r, the answer to req, breaks
// the API document.
func checkAPIDocument(t testing.TB, req *http.Request, r reply) {
	t.Helper()
	v, err := apiDocument()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ValidateResponse(req, r.status, r.header, []byte(r.body)); err != nil {
		t.Errorf("the answer breaks the API document: %v", err)
	}
}

// tokenRequest posts a form to the token endpoint with HTTP Basic credentials.
func tokenRequest(s *stack.Stack, id, secret string, form url.Values) (reply, error) {
	return do(s.HTTPClient(), newFormRequest(s.GatewayURL, "/api/oauth/token", id, secret, form))
}

// revokeToken revokes token as the app id (RFC 7009) through the gateway.
func revokeToken(t testing.TB, s *stack.Stack, id, secret, token string) reply {
	t.Helper()
	return mustDo(t, s.HTTPClient(), newFormRequest(s.GatewayURL, "/api/oauth/revoke", id, secret, url.Values{"token": {token}}))
}

// waitForStatus polls GET path with token through the gateway until it
// answers status, failing t after timeout; it returns how long that took.
func waitForStatus(t testing.TB, s *stack.Stack, path, token string, status int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, timeout, fmt.Sprintf("GET %s answering %d", path, status), func() error {
		if r := mustSend(t, s, http.MethodGet, path, token, ""); r.status != status {
			return fmt.Errorf("%d %.200s", r.status, r.body)
		}
		return nil
	})
	return time.Since(start)
}
