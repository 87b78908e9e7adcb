package jsonbody

import (
	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
)

// Paged is a search body: it knows its page limit (page.Request does).
type Paged interface {
	LimitValue() (int, *apierror.Error)
}

// DecodeSearch reads a search body into req (an empty body is {}: a first
// page) and returns its limit. On a bad body or limit it has aborted the
// request with the API error and ok is false.
func DecodeSearch(c *gin.Context, req Paged) (limit int, ok bool) {
	if e := Decode(c, req, Options{EmptyAsObject: true}); e != nil {
		apireply.Abort(c, e)
		return 0, false
	}
	limit, e := req.LimitValue()
	if e != nil {
		apireply.Abort(c, e)
		return 0, false
	}
	return limit, true
}
