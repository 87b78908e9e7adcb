package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// webhookReceiver is an app's webhook endpoint as an app developer would
// write it with an independent JOSE library (go-jose, not the jwx the
// system signs with): it verifies each request's JWT against the JWKS the
// gateway publishes, and the body against the token's digest, before it
// accepts the event. Requests that fail verification are kept in rejected.
type webhookReceiver struct {
	t       *testing.T
	srv     *httptest.Server
	jwksURL string
	issuer  string

	// status is what the receiver answers to a verified request (200 when
	// up; 503 "down").
	status atomic.Int32
	// hold, when set, blocks each request until it is closed.
	holdMu sync.Mutex
	hold   chan struct{}
	held   chan string // receives the jti of each request that blocked

	mu       sync.Mutex
	got      []webhookDelivery // verified requests, answered 2xx, in arrival order
	attempts map[string]int    // verified requests per jti, whatever the answer
	rejected []string
	samples  []signedRequest
}

// webhookDelivery is one verified, accepted request.
type webhookDelivery struct {
	App     string // the path's app id, which must equal the token's aud
	JTI     string
	EventID string
	Event   string
	Data    json.RawMessage
	At      time.Time
}

// signedRequest is a raw request kept to replay tampered copies.
type signedRequest struct {
	App, Token string
	Body       []byte
}

func startWebhookReceiver(t *testing.T, gatewayURL, issuer string) *webhookReceiver {
	r := &webhookReceiver{t: t, jwksURL: gatewayURL + "/.well-known/jwks.json", issuer: issuer,
		attempts: map[string]int{}, held: make(chan string, 100)}
	r.status.Store(http.StatusOK)
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.release()
		r.srv.Close()
	})
	return r
}

// URL is the endpoint of app (its client id).
func (r *webhookReceiver) URL(app string) string { return r.srv.URL + "/hooks/" + app }

func (r *webhookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	app := strings.TrimPrefix(req.URL.Path, "/hooks/")
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	token, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	claims, err := r.verify(app, token, body)
	if err == nil && claims.JTI != req.Header.Get("Webhook-Id") {
		err = fmt.Errorf("jti %q is not the Webhook-Id header %q", claims.JTI, req.Header.Get("Webhook-Id"))
	}
	if err != nil {
		r.mu.Lock()
		r.rejected = append(r.rejected, err.Error())
		r.mu.Unlock()
		http.Error(w, "unverified", http.StatusUnauthorized)
		return
	}
	var payload struct {
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &payload); err != nil || payload.Event != claims.Event || len(payload.Data) == 0 {
		r.mu.Lock()
		r.rejected = append(r.rejected, fmt.Sprintf("body %q does not carry the token's event %q", body, claims.Event))
		r.mu.Unlock()
		http.Error(w, "body", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.attempts[claims.JTI]++
	if len(r.samples) < 5 {
		r.samples = append(r.samples, signedRequest{App: app, Token: token, Body: body})
	}
	r.mu.Unlock()

	r.holdMu.Lock()
	hold := r.hold
	r.holdMu.Unlock()
	if hold != nil {
		r.held <- claims.JTI
		<-hold
	}
	status := int(r.status.Load())
	if status/100 == 2 {
		r.mu.Lock()
		r.got = append(r.got, webhookDelivery{App: app, JTI: claims.JTI, EventID: claims.EventID, Event: payload.Event,
			Data: payload.Data, At: time.Now()})
		r.mu.Unlock()
	}
	w.WriteHeader(status)
	if status/100 != 2 {
		// what an internal service might answer: never shown to the app
		_, _ = w.Write([]byte("receiver-internal: down for maintenance"))
	}
}

// webhookClaims are the claims the receiver checks.
type webhookClaims struct {
	Issuer     string `json:"iss"`
	Audience   any    `json:"aud"`
	IssuedAt   int64  `json:"iat"`
	Expiry     int64  `json:"exp"`
	JTI        string `json:"jti"`
	Event      string `json:"event"`
	EventID    string `json:"event_id"`
	BodySHA256 string `json:"body_sha256"`
}

// verify checks the token's signature against the published key set, its
// type, issuer, audience (the app), freshness, and that the body is the one
// signed.
func (r *webhookReceiver) verify(app, token string, body []byte) (webhookClaims, error) {
	var c webhookClaims
	sig, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return c, fmt.Errorf("parsing the JWT: %w", err)
	}
	if len(sig.Signatures) != 1 {
		return c, errors.New("not one signature")
	}
	h := sig.Signatures[0].Header
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != "webhook+jwt" {
		return c, fmt.Errorf("typ %q, want webhook+jwt", typ)
	}
	// As a real receiver does: fetch the key set again while the kid is
	// unknown (a 503 comes from auth while a restarted replica loads
	// its keys, the gateway while auth restarts), for up to 10 s.
	var found []jose.JSONWebKey
	for attempt := 0; len(found) != 1; attempt++ {
		keys, err := r.keys()
		if err == nil {
			found = keys.Key(h.KeyID)
		}
		if len(found) == 1 {
			break
		}
		if attempt == 40 {
			if err != nil {
				return c, err
			}
			return c, fmt.Errorf("kid %q is not in the JWKS", h.KeyID)
		}
		time.Sleep(250 * time.Millisecond)
	}
	payload, err := sig.Verify(found[0])
	if err != nil {
		return c, fmt.Errorf("signature: %w", err)
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, fmt.Errorf("claims: %w", err)
	}
	now := time.Now().Unix()
	digest := sha256.Sum256(body)
	switch {
	case c.Issuer != r.issuer:
		return c, fmt.Errorf("iss %q, want %q", c.Issuer, r.issuer)
	case fmt.Sprint(c.Audience) != app && fmt.Sprint(c.Audience) != "["+app+"]":
		return c, fmt.Errorf("aud %v, want %s", c.Audience, app)
	case c.Expiry < now || c.Expiry-c.IssuedAt > 15*60 || c.IssuedAt > now+60:
		return c, fmt.Errorf("stale or long-lived: iat %d exp %d now %d", c.IssuedAt, c.Expiry, now)
	case c.JTI == "" || c.EventID == "":
		return c, errors.New("no jti or event_id")
	case c.BodySHA256 != base64.RawURLEncoding.EncodeToString(digest[:]):
		return c, errors.New("body_sha256 does not match the body")
	}
	return c, nil
}

// keys fetches the published key set (a real receiver would cache it and
// refetch on an unknown kid).
func (r *webhookReceiver) keys() (*jose.JSONWebKeySet, error) {
	resp, err := http.Get(r.jwksURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("JWKS: status %d", resp.StatusCode)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	return &set, nil
}

// down makes the receiver answer 503 (true) or 200 (false).
func (r *webhookReceiver) down(d bool) {
	if d {
		r.status.Store(http.StatusServiceUnavailable)
	} else {
		r.status.Store(http.StatusOK)
	}
}

// holdRequests makes every request wait until release.
func (r *webhookReceiver) holdRequests() {
	r.holdMu.Lock()
	defer r.holdMu.Unlock()
	r.hold = make(chan struct{})
}

func (r *webhookReceiver) release() {
	r.holdMu.Lock()
	defer r.holdMu.Unlock()
	if r.hold != nil {
		close(r.hold)
		r.hold = nil
	}
}

// deliveries returns the accepted deliveries so far.
func (r *webhookReceiver) deliveries() []webhookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhookDelivery(nil), r.got...)
}

// attemptsOf is how many verified requests carried jti.
func (r *webhookReceiver) attemptsOf(jti string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[jti]
}

func (r *webhookReceiver) rejections() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.rejected...)
}

func (r *webhookReceiver) sample() signedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.samples) == 0 {
		r.t.Fatal("no request received yet")
	}
	return r.samples[0]
}
