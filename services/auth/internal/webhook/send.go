package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"
)

// Request headers of a delivery.
const (
	HeaderID        = "Webhook-Id"
	HeaderEvent     = "Webhook-Event"
	userAgent       = "eventreg-webhooks"
	maxAnswer       = 4 << 10 // the most of an answer's body read
	maxErrorSnippet = 200     // the most of it kept in lastError
	// tokenTTL is how long a delivery's JWT is valid.
	tokenTTL = 5 * time.Minute
)

// Signer signs webhook tokens (signing.Manager).
type Signer interface {
	SignWebhook(payload []byte) (string, error)
}

// tokenClaims are the claims of a delivery's JWT (typ webhook+jwt).
type tokenClaims struct {
	Issuer   string `json:"iss"`
	Audience string `json:"aud"` // the app's client id
	IssuedAt int64  `json:"iat"`
	Expiry   int64  `json:"exp"`
	// ID is the delivery id, the same on every attempt: the receiver's
	// dedupe key.
	ID      string `json:"jti"`
	Event   string `json:"event"`
	EventID string `json:"event_id"`
	// BodySHA256 is base64url (no padding) of SHA-256 of the exact body.
	BodySHA256 string `json:"body_sha256"`
}

// bodyHash is the body_sha256 claim of body.
func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sender makes the HTTP requests of deliveries.
type sender struct {
	client  *http.Client
	signer  Signer
	issuer  string
	timeout time.Duration
}

// newSender returns a sender whose connections pass policy at dial time,
// never through a proxy, never following redirects.
func newSender(policy *Policy, signer Signer, issuer string, timeout time.Duration, maxConns int) *sender {
	dialer := &net.Dialer{Timeout: timeout, Control: policy.Control}
	tr := &http.Transport{
		Proxy:                 nil, // never HTTP(S)_PROXY: the policy must see the real target
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}
	return &sender{
		client: &http.Client{Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		signer: signer, issuer: issuer, timeout: timeout,
	}
}

// result is what one attempt came to.
type result struct {
	status  int    // the HTTP status (0: no answer)
	problem string // why it failed ("" on a 2xx), safe to show the app
	refused bool   // the target policy refused the address
}

func (r result) ok() bool { return r.status >= 200 && r.status < 300 }

// send POSTs the claim's body to its subscription's URL. ctx carries the
// delivery span, whose context goes out as traceparent.
func (s *sender) send(ctx context.Context, c Claim) result {
	token, err := s.token(c)
	if err != nil {
		return result{problem: "signing the webhook token failed"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		return result{problem: "the subscription's URL cannot be requested"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(HeaderID, c.DeliveryID)
	req.Header.Set(HeaderEvent, c.EventType)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := s.client.Do(req)
	if err != nil {
		return transportProblem(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	r := result{status: resp.StatusCode}
	if !r.ok() {
		r.problem = "HTTP " + strconv.Itoa(resp.StatusCode)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			r.problem += " (redirects are not followed)"
		}
		if snippet := snippetOf(answer); snippet != "" {
			r.problem += ": " + snippet
		}
	}
	return r
}

// token signs the delivery's JWT.
func (s *sender) token(c Claim) (string, error) {
	now := time.Now()
	payload, err := json.Marshal(tokenClaims{Issuer: s.issuer, Audience: strconv.FormatInt(c.ClientID, 10), IssuedAt: now.Unix(),
		Expiry: now.Add(tokenTTL).Unix(), ID: c.DeliveryID, Event: c.EventType, EventID: c.EventID, BodySHA256: bodyHash(c.Body)})
	if err != nil {
		return "", fmt.Errorf("encoding webhook claims: %w", err)
	}
	return s.signer.SignWebhook(payload)
}

// transportProblem describes a request that got no answer, without the URL
// (it may carry a secret) and never the token.
func transportProblem(err error) result {
	var refused *RefusedError
	if errors.As(err, &refused) {
		return result{problem: refused.Error(), refused: true}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return result{problem: "timed out"}
	case errors.Is(err, context.Canceled):
		return result{problem: "cancelled"}
	}
	return result{problem: truncate(err.Error(), maxErrorSnippet)}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// snippetOf keeps the start of an answer's body as one printable line.
func snippetOf(b []byte) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, strings.ToValidUTF8(string(b), ""))
	return truncate(strings.Join(strings.Fields(s), " "), maxErrorSnippet)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
