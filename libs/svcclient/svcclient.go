// Package svcclient calls another service's internal listener: JSON in and
// out, a bounded timeout, W3C trace context propagated (otelhttp), and errors
// that tell "the other service cannot answer" (ErrUnavailable, answer 503)
// from "it answered no" (*StatusError).
package svcclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// ErrUnavailable is what every failure to get an answer is (errors.Is):
// refused connections, timeouts, 5xx responses and unreadable bodies. The
// error itself is an *UnavailableError naming the service.
var ErrUnavailable = errors.New("service unavailable")

// UnavailableError is a failure to get an answer from Service.
type UnavailableError struct {
	Service string
	Err     error
}

func (e *UnavailableError) Error() string {
	return e.Service + " service unavailable: " + e.Err.Error()
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes every UnavailableError an ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Dependency names the service for the 503 the caller answers
// (libs/apireply).
func (e *UnavailableError) Dependency() string { return "The " + e.Service + " service" }

// StatusError is a 4xx answer.
type StatusError struct {
	Status int
	Body   string
	Header http.Header
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Body) }

// IsStatus reports whether err is a StatusError with the given status.
func IsStatus(err error, status int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == status
}

// UserPath is an internal path pattern with a user id parameter (e.g.
// "/internal/users/:id/permissions", as the callee registers it) for userID.
func UserPath(pattern string, userID int64) string {
	return strings.Replace(pattern, ":id", strconv.FormatInt(userID, 10), 1)
}

// Credentials make the bearer token a call carries for the service named
// audience (servicetoken.Signer).
type Credentials interface {
	Token(audience string) (string, error)
}

// Client calls one service.
type Client struct {
	name  string
	base  string
	http  *http.Client
	creds Credentials
}

// New returns a client for the service name (e.g. "users") at baseURL
// (e.g. http://users:9090). Every call is bounded by timeout and carries a
// token from creds for name; nil creds send none (tests against doubles).
func New(name, baseURL string, timeout time.Duration, creds Credentials) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &Client{
		name:  name,
		base:  strings.TrimRight(baseURL, "/"),
		http:  &http.Client{Timeout: timeout, Transport: otelhttp.NewTransport(tr)},
		creds: creds,
	}
}

// Do sends in (nil for no body) as JSON and decodes a 2xx answer into out
// (nil to discard).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.creds != nil {
		tok, err := c.creds.Token(c.name)
		if err != nil {
			return c.unavailable("%s %s: %v", method, path, err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.unavailable("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return c.unavailable("reading %s %s: %v", method, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != "":
		// The service refused this one's token (a 401 of the endpoint
		// itself, a wrong password, has no challenge): the deployment is
		// misconfigured, not the request wrong.
		return c.unavailable("%s %s: refused this service's token: is INTERNAL_AUTH_KEY the same in both services?", method, path)
	case resp.StatusCode >= 500:
		return c.unavailable("%s %s answered %d", method, path, resp.StatusCode)
	case resp.StatusCode >= 400:
		return &StatusError{Status: resp.StatusCode, Body: string(data), Header: resp.Header}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return c.unavailable("decoding %s %s: %v", method, path, err)
		}
	}
	return nil
}

func (c *Client) unavailable(format string, args ...any) error {
	return &UnavailableError{Service: c.name, Err: fmt.Errorf(format, args...)}
}
