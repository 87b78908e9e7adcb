package webhookapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// start runs auth with a fast dispatcher that may reach 127.0.0.1.
func start(t *testing.T) *authtest.Server {
	t.Helper()
	return authtest.Start(t, authtest.Options{Env: map[string]string{
		"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32", "WEBHOOK_POLL_INTERVAL": "20ms", "WEBHOOK_RETRY_BASE": "10ms",
		"WEBHOOK_RETRY_MAX": "50ms", "WEBHOOK_TIMEOUT": "1s", "WEBHOOK_LEASE": "2s",
	}})
}

// token gets an app's client-credentials token for scopes.
func token(t *testing.T, s *authtest.Server, id, secret string, scopes ...string) string {
	t.Helper()
	cfg := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: s.URL + "/api/oauth/token", Scopes: scopes}
	tok, err := cfg.Token(context.Background())
	if err != nil {
		t.Fatalf("token of %s: %v", id, err)
	}
	return tok.AccessToken
}

var (
	specOnce sync.Once
	spec     *apispec.Validator
	specErr  error
)

// answer is a response of the API.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("not a JSON object: %s", a.body)
	}
	return m
}

// errorOf returns the category and the detail of an error body.
func (a answer) errorOf(t *testing.T) (string, map[string]any) {
	t.Helper()
	errs, _ := a.json(t)["errors"].(map[string]any)
	for cat, d := range errs {
		detail, _ := d.(map[string]any)
		return cat, detail
	}
	t.Fatalf("no error in %s", a.body)
	return "", nil
}

// call sends a request to the public API (bearer token when not "") with
// a raw body (nil for none) and checks the answer against the document.
func call(t *testing.T, s *authtest.Server, method, path, bearer string, body []byte, header ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	specOnce.Do(func() { spec, specErr = apispec.NewValidator() })
	if specErr != nil {
		t.Fatal(specErr)
	}
	if err := spec.ValidateResponse(req, resp.StatusCode, resp.Header, b); err != nil {
		t.Errorf("the answer does not match the OpenAPI document: %v\nbody: %s", err, b)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func jsonBody(v any) []byte { b, _ := json.Marshal(v); return b }

// receiver is a webhook endpoint on 127.0.0.1 recording what it gets.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []*http.Request
	raw [][]byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got, rc.raw = append(rc.got, r), append(rc.raw, b)
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) count() int { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.got) }

func (rc *receiver) last() (*http.Request, []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got[len(rc.got)-1], rc.raw[len(rc.raw)-1]
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := testkit.Poll(context.Background(), 10*time.Second, func(context.Context) error {
		if cond() {
			return nil
		}
		return context.DeadlineExceeded
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func publish(t *testing.T, s *authtest.Server, events ...authapi.Event) int {
	t.Helper()
	n, err := authapi.NewClient(s.InternalURL, 5*time.Second, s.Peer).PublishEvents(context.Background(), events)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func event(typ, resource, data string) authapi.Event {
	return authapi.Event{ID: uuid.NewString(), Type: typ, Source: "test", Resource: resource, Data: json.RawMessage(data), OccurredAt: time.Now()}
}
