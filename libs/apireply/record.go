package apireply

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/userid"
)

// UserRecord serves GET /api/v0/users/:id/<record>, a user's record in the
// current convention: an :id that is not a user id is 404 "No such user.", an
// error of get is answered by reply (whose rules name the missing record),
// and a record is rendered by render with 200.
func UserRecord[T, J any](c *gin.Context, reply Replier, get func(context.Context, int64) (T, error), render func(T) J) {
	id, ok := userid.Parse(c.Param("id"))
	if !ok {
		Abort(c, apierror.NotFound("No such user."))
		return
	}
	r, err := get(c.Request.Context(), id)
	if err != nil {
		reply.Error(c, err)
		return
	}
	c.JSON(http.StatusOK, render(r))
}
