// Package apireply is the one error path of every service: it turns the error
// a handler got from its business layer into the API's error response.
//
// The order is the same everywhere: an *apierror.Error is sent as it is; then
// the service's own Rules (its business errors, each mapped once); then a
// dependency that could not answer (an apierror.Dependency in the chain, a
// database that cannot be reached) is a 503 naming it;
// anything else is a 500 whose hash ties the body to the log line.
package apireply

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/pgdb"
)

// TimeFormat is how the API writes a time (createdAt, updatedAt): RFC 3339
// with milliseconds, formatted in UTC, so that a change within the same
// second still shows a new updatedAt.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Abort writes e and stops the gin handler chain.
func Abort(c *gin.Context, e *apierror.Error) {
	for k, v := range e.Headers {
		c.Header(k, v)
	}
	c.AbortWithStatusJSON(e.Status, e.Body())
}

// AbortOAuth writes an RFC 6749 error body with Cache-Control: no-store.
func AbortOAuth(c *gin.Context, e *apierror.OAuthError) {
	for k, v := range e.Headers {
		c.Header(k, v)
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	c.AbortWithStatusJSON(e.Status, e.Body())
}

// Rule answers the business errors it matches with their API error, and
// returns nil for every other error.
type Rule func(error) *apierror.Error

// Is is the rule that answers errors matching target (errors.Is) with reply().
func Is(target error, reply func() *apierror.Error) Rule {
	return func(err error) *apierror.Error {
		if errors.Is(err, target) {
			return reply()
		}
		return nil
	}
}

// As is the rule that answers errors of type T (errors.As) with reply.
func As[T error](reply func(T) *apierror.Error) Rule {
	return func(err error) *apierror.Error {
		var t T
		if errors.As(err, &t) {
			return reply(t)
		}
		return nil
	}
}

// Replier is one service's error path: Rules are its business errors.
type Replier struct {
	Log   *slog.Logger
	Rules []Rule
}

// Error aborts the request with the response err deserves (see the package
// comment); a 5xx is logged with the route.
func (r Replier) Error(c *gin.Context, err error) {
	Abort(c, r.Response(c.Request.Context(), c.FullPath(), err))
}

// Response returns the API error for err, logging a 5xx. The log line
// carries the error text, which the layers below keep free of secrets.
func (r Replier) Response(ctx context.Context, route string, err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	for _, rule := range r.Rules {
		if e := rule(err); e != nil {
			if e.Status >= 500 {
				r.Log.WarnContext(ctx, "request refused", "route", route, "status", e.Status, "err", err.Error())
			}
			return e
		}
	}
	if what, ok := dependency(err); ok {
		r.Log.WarnContext(ctx, "dependency unavailable", "route", route, "dependency", what, "err", err.Error())
		return apierror.Unavailable(what)
	}
	hash := apierror.NewHash()
	r.Log.ErrorContext(ctx, "request failed", "hash", hash, "route", route, "err", err.Error())
	return apierror.Internal(hash)
}

// dependency names the dependency that failed in err, if one did.
func dependency(err error) (string, bool) {
	var d apierror.Dependency
	if errors.As(err, &d) {
		return d.Dependency(), true
	}
	if pgdb.IsUnavailable(err) {
		return "The database", true
	}
	return "", false
}

// OAuthError aborts an OAuth endpoint's request (token, revocation,
// introspection) with err in RFC 6749's shape: an *apierror.OAuthError as it
// is, a failed dependency as temporarily_unavailable (503), anything else as
// server_error (500) with a logged hash.
func (r Replier) OAuthError(c *gin.Context, err error) {
	var oe *apierror.OAuthError
	if errors.As(err, &oe) {
		AbortOAuth(c, oe)
		return
	}
	ctx, route := c.Request.Context(), c.FullPath()
	if what, ok := dependency(err); ok {
		r.Log.WarnContext(ctx, "dependency unavailable", "route", route, "dependency", what, "err", err.Error())
		e := apierror.NewOAuth(apierror.OAuthTemporarilyUnavailable, what+" is temporarily unavailable; try again shortly.")
		e.Headers = map[string]string{"Retry-After": "1"}
		AbortOAuth(c, e)
		return
	}
	hash := apierror.NewHash()
	r.Log.ErrorContext(ctx, "request failed", "hash", hash, "route", route, "err", err.Error())
	AbortOAuth(c, apierror.NewOAuth(apierror.OAuthServerError, "Internal server error ("+hash+")."))
}
