package servicetoken

import (
	"errors"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/tokenauth"
)

// OpenPrefix is the one part of an internal listener served without a
// token: published metadata (auth's JWKS), which the gateway serves to
// anyone anyway.
const OpenPrefix = "/.well-known/"

// Middleware refuses every request without a valid service token for this
// service (401 in the API's shape: "Token expired." or "Invalid token.",
// with a Bearer challenge), except the routes under OpenPrefix. Unknown
// paths are refused too, so a caller without a key learns nothing of the
// routes. The caller's name goes to the request's log line as its client.
func (v *Verifier) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		if route := c.FullPath(); route != "" && strings.HasPrefix(route, OpenPrefix) {
			c.Next()
			return
		}
		raw, ok := tokenauth.Bearer(c.GetHeader("Authorization"))
		if !ok {
			apireply.Abort(c, apierror.MissingToken())
			return
		}
		caller, err := v.Verify(raw)
		if err != nil {
			apireply.Abort(c, apierror.Unauthenticated(errors.Is(err, ErrExpired)))
			return
		}
		c.Set(httpserver.LogClientIDKey, "service:"+caller)
		c.Next()
	}
}
