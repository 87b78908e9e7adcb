package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

// TestConCatWebhooks: a subscription in the real API's format is delivered
// through the real system to receivers written from the real API's
// documentation alone: one in Go (golang-jwt reading the PEM of GET
// /api/webhooks/key through the gateway) and, when node and npm are
// installed, one in Node (the jose package's importSPKI). Both check aud,
// exp, iss, sub, the signature and int, in that order, and refuse the same
// token with a changed body.
func TestConCatWebhooks(t *testing.T) {
	s := startWithWebhooks(t, nil)
	waitForEmptyOutboxes(t, s)
	keyURL := s.GatewayURL + "/api/webhooks/key"
	goRecv := startConCatReceiver(t, keyURL, s.Issuer)
	nodeRecv := startNodeConCatReceiver(t, keyURL, s.Issuer)
	tok := serviceToken(t, s, trackerID, trackerSecret, "webhook:manage", "user:read")

	t.Run("the key is served through the gateway as one PEM public key, no token needed", func(t *testing.T) {
		r := mustSend(t, s, http.MethodGet, "/api/webhooks/key", "", "")
		if r.status != http.StatusOK || !strings.HasPrefix(r.body, "-----BEGIN PUBLIC KEY-----\n") || strings.Count(r.body, "-----BEGIN") != 1 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	urls := []string{goRecv.URL()}
	if nodeRecv != nil {
		urls = append(urls, nodeRecv.url)
	}
	for _, u := range urls {
		if r := postSubscription(t, s, tok, map[string]any{"url": u, "events": []string{"user-updated"}, "format": "concat"}); r.status != http.StatusCreated ||
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
		if err := testkit.VerifyConCatDelivery(got.token, tampered, goRecv.key(t), goRecv.URL(), s.Issuer); err == nil || !strings.Contains(err.Error(), "int") {
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
