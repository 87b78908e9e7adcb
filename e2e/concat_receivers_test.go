package e2e

import (
	"bufio"
	"encoding/json"
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

	"github.com/eventreg/eventreg/libs/testkit"
)

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
		err := testkit.VerifyConCatDelivery(token, body, r.key(t), r.URL(), issuer)
		if err != nil && strings.Contains(err.Error(), "signature") {
			r.refetch(t) // keys rotate: fetch the key again, once
			err = testkit.VerifyConCatDelivery(token, body, r.key(t), r.URL(), issuer)
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
	req, err := newRequest(url, http.MethodPost, "", token, string(body))
	if err != nil {
		t.Fatal(err)
	}
	r := mustDo(t, http.DefaultClient, req)
	return r.status, r.body
}
