package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jwt "github.com/golang-jwt/jwt/v5"

	"github.com/eventreg/eventreg/e2e/stack"
)

// TestConCatWebhooks: a subscription in the real API's format is delivered
// through the real system to receivers written from the real API's
// documentation alone: one in Go (golang-jwt reading the PEM of GET
// /api/webhooks/key through the gateway) and, when node and npm are
// installed, one in Node (the jose package's importSPKI). Both check aud,
// exp, iss, sub, the signature and int, in that order, and refuse the same
// token with a changed body.
func TestConCatWebhooks(t *testing.T) {
	s := stack.Start(t, stack.Options{Env: map[string]string{
		"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
		"WEBHOOK_RETRY_BASE":       "100ms",
		"WEBHOOK_POLL_INTERVAL":    "250ms",
	}})
	waitForEmptyOutboxes(t, s)
	keyURL := s.GatewayURL + "/api/webhooks/key"
	goRecv := startConCatReceiver(t, keyURL, s.Issuer)
	nodeRecv := startNodeConCatReceiver(t, keyURL, s.Issuer)
	tok := serviceToken(t, s, trackerID, trackerSecret, "webhook:manage", "user:read")

	t.Run("the key is served through the gateway as one PEM public key, no token needed", func(t *testing.T) {
		r := mustSend(t, s, http.MethodGet, "/api/webhooks/key", "", "", "")
		if r.status != http.StatusOK || !strings.HasPrefix(r.body, "-----BEGIN PUBLIC KEY-----\n") || strings.Count(r.body, "-----BEGIN") != 1 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	urls := []string{goRecv.URL()}
	if nodeRecv != nil {
		urls = append(urls, nodeRecv.url)
	}
	for _, u := range urls {
		b, _ := json.Marshal(map[string]any{"url": u, "events": []string{"user-updated"}, "format": "concat"})
		if r := mustSend(t, s, http.MethodPost, "/api/v0/webhooks", tok, "application/json", string(b)); r.status != http.StatusCreated ||
			!strings.Contains(r.body, `"format":"concat"`) {
			t.Fatalf("subscribing %s: %d %s", u, r.status, r.body)
		}
	}
	// A name with the characters encoding/json escapes and JSON.stringify
	// does not: int must still match what a Node receiver hashes.
	importFixture(t, s, "users", map[string]any{"users": []any{userRecord(t, 1005, "Tom & Jerry <3>")}})

	var got conCatRequest
	t.Run("the Go receiver verifies the delivery", func(t *testing.T) {
		eventually(t, 30*time.Second, "a verified delivery", func() error {
			reqs, problems := goRecv.received()
			if len(problems) > 0 {
				t.Fatalf("the receiver refused a delivery: %v", problems)
			}
			for _, r := range reqs {
				if strings.Contains(string(r.body), "Tom & Jerry <3>") {
					got = r
					return nil
				}
			}
			return fmt.Errorf("%d deliveries, none of the change", len(reqs))
		})
		if got.userAgent != "ConCat/AxiosHTTPClient eventreg-webhooks" {
			t.Errorf("User-Agent %q", got.userAgent)
		}
	})
	if got.token == "" {
		t.FailNow()
	}
	t.Run("the Go receiver refuses the token with a changed body (int)", func(t *testing.T) {
		tampered := bytes.Replace(got.body, []byte("Tom & Jerry"), []byte("Tim & Jerry"), 1)
		if err := verifyConCatDelivery(got.token, tampered, goRecv.key(t), goRecv.URL(), s.Issuer); err == nil || !strings.Contains(err.Error(), "int") {
			t.Fatalf("a changed body: %v", err)
		}
	})
	t.Run("the Node receiver (jose, importSPKI) verifies the delivery and refuses a changed body", func(t *testing.T) {
		if nodeRecv == nil {
			t.Skip("node or npm is not installed")
		}
		var line nodeLine
		eventually(t, 30*time.Second, "a verified delivery at the Node receiver", func() error {
			for _, l := range nodeRecv.lines() {
				if !l.OK {
					t.Fatalf("the Node receiver refused a delivery: %s", l.Problem)
				}
				if strings.Contains(string(l.Data), "Tom & Jerry <3>") {
					line = l
					return nil
				}
			}
			return errors.New("not yet")
		})
		if line.UserAgent != "ConCat/AxiosHTTPClient eventreg-webhooks" || line.Event != "user-updated" {
			t.Errorf("%+v", line)
		}
		// The Go receiver's copy of the same change, token and body, to the
		// Node receiver's URL: its token is for the Go receiver's (aud).
		if status, body := postDelivery(t, nodeRecv.url, got.token, got.body); status != http.StatusUnauthorized || body != "aud" {
			t.Errorf("a token for another URL: %d %s", status, body)
		}
		status, body := postDelivery(t, nodeRecv.url, line.Token, []byte(strings.Replace(line.Body, "Tom", "Tim", 1)))
		if status != http.StatusUnauthorized || body != "int" {
			t.Errorf("a changed body: %d %s", status, body)
		}
		if status, body := postDelivery(t, nodeRecv.url, line.Token, []byte(line.Body)); status != http.StatusNoContent {
			t.Errorf("the same request unchanged: %d %s", status, body)
		}
	})
}

// conCatReceiver is a webhook endpoint written from the real API's
// documentation in Go: the PEM of GET /api/webhooks/key, golang-jwt.
type conCatReceiver struct {
	srv            *httptest.Server
	keyURL, issuer string

	mu       sync.Mutex
	pem      []byte
	reqs     []conCatRequest
	problems []string
}

type conCatRequest struct {
	token, userAgent string
	body             []byte
}

func startConCatReceiver(t *testing.T, keyURL, issuer string) *conCatReceiver {
	r := &conCatReceiver{keyURL: keyURL, issuer: issuer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		token := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
		err := verifyConCatDelivery(token, body, r.key(t), r.URL(), issuer)
		if err != nil && strings.Contains(err.Error(), "signature") {
			r.refetch(t) // keys rotate: fetch the key again, once
			err = verifyConCatDelivery(token, body, r.key(t), r.URL(), issuer)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.problems = append(r.problems, err.Error())
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		r.reqs = append(r.reqs, conCatRequest{token: token, userAgent: req.Header.Get("User-Agent"), body: body})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *conCatReceiver) URL() string { return r.srv.URL + "/hooks/concat" }

func (r *conCatReceiver) received() ([]conCatRequest, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs), slices.Clone(r.problems)
}

func (r *conCatReceiver) key(t *testing.T) []byte {
	r.mu.Lock()
	have := r.pem
	r.mu.Unlock()
	if have == nil {
		r.refetch(t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pem
}

func (r *conCatReceiver) refetch(t *testing.T) {
	resp, err := http.Get(r.keyURL)
	if err != nil {
		t.Errorf("fetching the webhook key: %v", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r.mu.Lock()
	r.pem = b
	r.mu.Unlock()
}

// verifyConCatDelivery checks a delivery in the documentation's order: aud
// (the webhook's URL), exp, iss, sub, then the signature with the PEM key,
// then int (base64 of the SHA-256 of the data property as received).
func verifyConCatDelivery(token string, body, pemKey []byte, url, issuer string) error {
	var claims jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		return fmt.Errorf("not a JWT: %w", err)
	}
	if aud, _ := claims.GetAudience(); !slices.Contains(aud, url) {
		return fmt.Errorf("aud %v is not %s", aud, url)
	}
	if exp, _ := claims.GetExpirationTime(); exp == nil || !exp.After(time.Now()) {
		return errors.New("exp: expired")
	}
	if iss, _ := claims.GetIssuer(); iss != issuer {
		return fmt.Errorf("iss %q", iss)
	}
	if sub, _ := claims.GetSubject(); sub != "webhook" {
		return fmt.Errorf("sub %q", sub)
	}
	key, err := jwt.ParseECPublicKeyFromPEM(pemKey)
	if err != nil {
		return fmt.Errorf("signature: the key is not a PEM public key: %w", err)
	}
	if _, err := jwt.Parse(token, func(*jwt.Token) (any, error) { return key, nil }, jwt.WithValidMethods([]string{"ES256"})); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	var b struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	sum := sha256.Sum256(b.Data)
	if claims["int"] != base64.StdEncoding.EncodeToString(sum[:]) {
		return errors.New("int does not match the data")
	}
	return nil
}

// nodeReceiver is testdata/concat-receiver/receiver.mjs running under node.
type nodeReceiver struct {
	url string

	mu  sync.Mutex
	out []nodeLine
}

// nodeLine is one line the Node receiver prints per request.
type nodeLine struct {
	OK        bool            `json:"ok"`
	Problem   string          `json:"problem"`
	UserAgent string          `json:"userAgent"`
	JTI       string          `json:"jti"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	// Token and Body are the request's, to send a changed copy.
	Token string `json:"token"`
	Body  string `json:"body"`
}

// startNodeConCatReceiver installs the receiver's packages (npm ci, from its
// lock file) in a temporary copy and starts it; nil when node or npm is
// not installed.
func startNodeConCatReceiver(t *testing.T, keyURL, issuer string) *nodeReceiver {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Log("node or npm is not installed: the Node receiver does not run")
		return nil
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "receiver.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "concat-receiver", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	cmd := exec.Command(node, "receiver.mjs", keyURL, issuer)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	if !lines.Scan() {
		t.Fatalf("the Node receiver did not start: %v", lines.Err())
	}
	var hello struct{ Listening int }
	if err := json.Unmarshal(lines.Bytes(), &hello); err != nil || hello.Listening == 0 {
		t.Fatalf("the Node receiver printed %s", lines.Bytes())
	}
	r := &nodeReceiver{url: fmt.Sprintf("http://127.0.0.1:%d/hooks/concat", hello.Listening)}
	go func() {
		for lines.Scan() {
			var l nodeLine
			if json.Unmarshal(lines.Bytes(), &l) == nil {
				r.mu.Lock()
				r.out = append(r.out, l)
				r.mu.Unlock()
			}
		}
	}()
	return r
}

func (r *nodeReceiver) lines() []nodeLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.out)
}

// postDelivery sends a delivery's token and body to url, as auth does.
func postDelivery(t *testing.T, url, token string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
