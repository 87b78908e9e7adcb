// Package apireply turns the error a handler got from its business layer into the API's error response: its own API error, 503 for an unavailable dependency, else a logged 500.
package apireply

import (
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

// Classified is implemented by errors that know their API error (for example
// usersummary.UnavailableError).
type Classified interface {
	APIError() *apierror.Error
}

// Error aborts the request with the response err deserves:
//   - an *apierror.Error or a Classified error: that error;
//   - the database cannot answer (pgdb.IsUnavailable): 503;
//   - anything else: 500 with a hash, logged with the same hash. The log line
//     carries the error text, which the layers below keep free of secrets.
func Error(c *gin.Context, log *slog.Logger, err error) {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		apierror.Abort(c, ae)
		return
	}
	var ce Classified
	if errors.As(err, &ce) {
		e := ce.APIError()
		if e.Status >= 500 {
			log.WarnContext(c.Request.Context(), "dependency unavailable", "route", c.FullPath(), "err", err.Error())
		}
		apierror.Abort(c, e)
		return
	}
	if pgdb.IsUnavailable(err) {
		log.WarnContext(c.Request.Context(), "database unavailable", "route", c.FullPath(), "err", err.Error())
		apierror.Abort(c, apierror.Unavailable("The database"))
		return
	}
	hash := apierror.NewHash()
	log.ErrorContext(c.Request.Context(), "request failed", "hash", hash, "route", c.FullPath(), "err", err.Error())
	apierror.Abort(c, apierror.Internal(hash))
}
