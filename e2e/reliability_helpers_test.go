package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
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

// send makes one request through the gateway; a transport error (timeout,
// reset) is returned, never a fatal, so load loops can count them.
func send(s *stack.Stack, method, path, token, contentType, body string) (reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.GatewayURL+path, rd)
	if err != nil {
		return reply{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	var wrote time.Time
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote = time.Now() }}))
	start := time.Now()
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		return reply{took: time.Since(start), wrote: wrote}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), took: time.Since(start), wrote: wrote}, nil
}

// mustSend is send failing t on a transport error.
func mustSend(t *testing.T, s *stack.Stack, method, path, token, contentType, body string) reply {
	t.Helper()
	r, err := send(s, method, path, token, contentType, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// serviceToken is a client-credentials access token of the demo tracker app.
func serviceToken(t *testing.T, s *stack.Stack, id, secret string, scopes ...string) string {
	t.Helper()
	tok, err := clientCredentials(s.GatewayURL, id, secret, oauth2.AuthStyleInHeader, scopes...).Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// tokenRequest posts a form to the token endpoint with HTTP Basic credentials.
func tokenRequest(s *stack.Stack, id, secret string, form url.Values) (reply, error) {
	req, _ := http.NewRequest(http.MethodPost, s.GatewayURL+"/api/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	start := time.Now()
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		return reply{took: time.Since(start)}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), took: time.Since(start)}, nil
}

// eventually polls check until it returns nil or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	err := testkit.Poll(context.Background(), timeout, func(context.Context) error { return check() })
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}

// want returns a check of an answer: an error unless it has status.
func want(status int) func(reply, error) error {
	return func(r reply, err error) error {
		if err != nil {
			return err
		}
		if r.status != status {
			return fmt.Errorf("status %d (want %d): %.300s", r.status, status, r.body)
		}
		return nil
	}
}

// rssKiB reads VmRSS of pid from /proc.
func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}
