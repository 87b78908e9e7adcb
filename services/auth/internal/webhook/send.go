package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"
)

// Request headers of a delivery.
const (
	HeaderID        = "Webhook-Id"
	HeaderEvent     = "Webhook-Event"
	maxAnswer       = 4 << 10 // the most of an answer's body read
	maxErrorSnippet = 200     // the most of it kept in lastError
)

// sender makes the HTTP requests of deliveries: one client per reach of
// the target policy, each with its own connections, so that no connection
// opened under one rule carries a request under another.
type sender struct {
	public  *http.Client // https, public addresses only
	allowed *http.Client // https, public addresses and the allowed networks
	private *http.Client // http, the allowed networks only
	signer  Signer
	issuer  string
	timeout time.Duration
}

// newSender returns a sender whose connections pass policy at dial time,
// never through a proxy, never following redirects.
func newSender(policy *Policy, signer Signer, issuer string, timeout time.Duration, maxConns int) *sender {
	client := func(r Reach) *http.Client {
		dialer := &net.Dialer{Timeout: timeout, Control: policy.Control(r)}
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
		return &http.Client{Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &sender{public: client(ReachPublic), allowed: client(ReachAllowed), private: client(ReachPrivate),
		signer: signer, issuer: issuer, timeout: timeout}
}

// result is what one attempt came to.
type result struct {
	status  int    // the HTTP status (0: no answer)
	problem string // why it failed ("" on a 2xx), safe to show the app
	refused bool   // the target policy refused the address
}

func (r result) ok() bool { return r.status >= 200 && r.status < 300 }

// refusedPlain is an http subscription of an app not (or no longer) allowed
// private targets: http goes nowhere else.
const refusedPlain = "refused: http is sent only to targets inside WEBHOOK_ALLOWED_NETWORKS, which an operator has not allowed this app"

// clientFor returns the client whose connections may reach what the
// claim's app may, nil when none may (plain http of an app not allowed
// private targets).
func (s *sender) clientFor(c Claim) *http.Client {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		return nil
	case u.Scheme == "https" && c.PrivateTargets:
		return s.allowed
	case u.Scheme == "https":
		return s.public
	case u.Scheme == "http" && c.PrivateTargets:
		return s.private
	}
	return nil
}

// peer records the address a request's connection went to.
type peer struct {
	mu   sync.Mutex
	addr netip.Addr
}

func (p *peer) got(info httptrace.GotConnInfo) {
	ap, err := netip.ParseAddrPort(info.Conn.RemoteAddr().String())
	if err != nil {
		return
	}
	p.mu.Lock()
	p.addr = ap.Addr().Unmap()
	p.mu.Unlock()
}

// public reports whether the connection went to a public address.
func (p *peer) public() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr.IsValid() && Public(p.addr)
}

// send POSTs the claim's body to its subscription's URL. ctx carries the
// delivery span, whose context goes out as traceparent. What the peer sent
// (the start of its answer, its protocol errors) is shown to the app only
// when the peer is a public address: a private target's answer would let
// the app read internal services.
func (s *sender) send(ctx context.Context, c Claim) result {
	client := s.clientFor(c)
	if client == nil {
		return result{problem: refusedPlain, refused: true}
	}
	token, err := s.token(c)
	if err != nil {
		return result{problem: "signing the webhook token failed"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var to peer
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: to.got})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		return result{problem: "the subscription's URL cannot be requested"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent(c.Format))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(HeaderID, c.DeliveryID)
	req.Header.Set(HeaderEvent, c.EventType)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := client.Do(req)
	shown := client == s.public || to.public()
	if err != nil {
		return transportProblem(err, shown)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	r := result{status: resp.StatusCode}
	if !r.ok() {
		r.problem = "HTTP " + strconv.Itoa(resp.StatusCode)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			r.problem += " (redirects are not followed)"
		}
		if snippet := snippetOf(answer); snippet != "" && shown {
			r.problem += ": " + snippet
		}
	}
	return r
}

// transportProblem describes a request that got no answer, without the URL
// (it may carry a secret) and never the token; when the peer's words may
// not be shown (not a public address), only the kind of failure.
func transportProblem(err error, shown bool) result {
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
	case shown:
		return result{problem: truncate(err.Error(), maxErrorSnippet)}
	case errors.Is(err, syscall.ECONNREFUSED):
		return result{problem: "connection refused"}
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return result{problem: "connection closed without an answer"}
	}
	return result{problem: "no HTTP answer"}
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
