// Package forward hands a public request to the service that owns it, as it
// came, and hands the owner's answer back: how users serves the two
// sub-resources other services own under /api/v0/users (decision 0085).
package forward

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/eventreg/eventreg/libs/apierror"
)

// Defaults of Options.
const (
	DefaultDialTimeout      = time.Second
	DefaultTimeout          = 5 * time.Second
	DefaultMaxResponseBytes = 16 << 20
)

// Options bound one forwarded request.
type Options struct {
	// DialTimeout bounds connecting to the owner.
	DialTimeout time.Duration
	// Timeout bounds the whole exchange, the owner's body included; past it
	// the answer is a 503 (or, once the owner's headers have been passed on,
	// the connection is cut).
	Timeout time.Duration
	// MaxResponseBytes is the largest body passed back: an owner announcing
	// more gets a 503; one streaming more has the connection cut.
	MaxResponseBytes int64
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return o
}

// Proxy forwards requests to one owner's public listener.
type Proxy struct {
	owner   string
	timeout time.Duration
	rp      *httputil.ReverseProxy
	log     *slog.Logger
}

// forwardedHeaders are the headers the gateway set that ReverseProxy drops
// before Rewrite; they are passed on as the gateway sent them, so the owner
// logs and throttles the client, not this service.
var forwardedHeaders = []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// New returns a proxy to the owner's public listener at base (an origin such
// as http://volunteers:8080). owner names the service in 503 bodies and logs.
func New(owner, base string, log *slog.Logger, opts Options) (*Proxy, error) {
	target, err := url.Parse(base)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" ||
		(target.Path != "" && target.Path != "/") || target.RawQuery != "" {
		return nil, fmt.Errorf("the %s service's public URL %q must be an origin such as http://%s:8080", owner, base, owner)
	}
	target.Path = ""
	opts = opts.withDefaults()

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = opts.DialTimeout
	tr.ResponseHeaderTimeout = opts.Timeout
	tr.MaxIdleConnsPerHost = 64
	// Bodies pass as they are: no Accept-Encoding added, nothing decompressed.
	tr.DisableCompression = true

	p := &Proxy{owner: owner, timeout: opts.Timeout, log: log}
	limit := opts.MaxResponseBytes
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			for _, h := range forwardedHeaders {
				if v, ok := pr.In.Header[h]; ok {
					pr.Out.Header[h] = v
				}
			}
		},
		Transport: otelhttp.NewTransport(tr),
		ModifyResponse: func(resp *http.Response) error {
			if resp.ContentLength > limit {
				return fmt.Errorf("%w: %d bytes announced", errTooLarge, resp.ContentLength)
			}
			resp.Body = &limitedBody{rc: resp.Body, left: limit}
			return nil
		},
		ErrorHandler: p.fail,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return p, nil
}

var errTooLarge = errors.New("answer larger than the forwarding limit")

// ServeHTTP forwards r within the proxy's timeout.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// fail answers when the owner gave no answer to pass on: a 503 in the API's
// shape, never a 500; a body past the service's limit keeps its 413.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *apierror.Error
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		e = apierror.BodyTooLarge(mbe.Limit)
	} else {
		e = apierror.Unavailable("The " + p.owner + " service")
		level := slog.LevelWarn
		if errors.Is(r.Context().Err(), context.Canceled) {
			level = slog.LevelInfo // the client went away; nobody reads this answer
		}
		p.log.Log(r.Context(), level, "forwarding failed", "owner", p.owner, "method", r.Method,
			"hash", e.Extra["hash"], "error", err.Error())
	}
	body, _ := json.Marshal(e.Body())
	for k, v := range e.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// limitedBody ends an owner's body with an error past its limit, which makes
// ReverseProxy abort the client's connection instead of passing more on.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte tells an owner that stopped exactly at the limit
		// from one that goes on.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
