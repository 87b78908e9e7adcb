package apireply

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/userid"
)

// UserRecord serves GET /api/v0/users/:id/<record>, a user's record in the
// current convention: an :id that is not a user id is 404 "No such user.", get
// returning notFound is 404 with missing as the message, another error is
// answered as Error does, and a record is rendered by render with 200.
func UserRecord[T, J any](c *gin.Context, log *slog.Logger, get func(context.Context, int64) (T, error), notFound error, missing string, render func(T) J) {
	id, ok := userid.Parse(c.Param("id"))
	if !ok {
		apierror.Abort(c, apierror.NotFound("No such user."))
		return
	}
	r, err := get(c.Request.Context(), id)
	if errors.Is(err, notFound) {
		apierror.Abort(c, apierror.NotFound(missing))
		return
	}
	if err != nil {
		Error(c, log, err)
		return
	}
	c.JSON(http.StatusOK, render(r))
}
