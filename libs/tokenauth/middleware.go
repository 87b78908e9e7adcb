package tokenauth

import (
	"errors"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/userid"
)

const claimsKey = "tokenauth.claims"

// Middleware requires a valid bearer token and stores its claims in the gin
// context. Missing, bad or revoked tokens get 401 "Invalid token.", expired
// ones 401 "Token expired.", both with a WWW-Authenticate challenge.
func (v *Validator) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		raw, ok := Bearer(c.GetHeader("Authorization"))
		if !ok {
			apireply.Abort(c, apierror.MissingToken())
			return
		}
		claims, err := v.Validate(c.Request.Context(), raw)
		switch {
		case errors.Is(err, ErrExpired):
			apireply.Abort(c, apierror.Unauthenticated(true))
			return
		case errors.Is(err, ErrUnavailable):
			apireply.Abort(c, apierror.Unavailable("Token verification"))
			return
		case err != nil:
			apireply.Abort(c, apierror.Unauthenticated(false))
			return
		}
		c.Set(claimsKey, claims)
		c.Set(httpserver.LogClientIDKey, claims.ClientID)
		c.Next()
	}
}

// RequireScope refuses (403 insufficient_scope) a token without scope. It
// must follow Middleware.
func RequireScope(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		claims := FromContext(c)
		if claims == nil || !claims.HasScope(scope) {
			apireply.Abort(c, apierror.InsufficientScope(scope))
			return
		}
		c.Next()
	}
}

// RequireScopeOrSelf lets through a token carrying scope, or a token issued
// on behalf of a user carrying selfScope when the path parameter param is
// that user's own id ("current" is not taken). A token with selfScope naming
// another user, or a malformed id, is refused 403 (access) before anything is
// read: the answer says nothing of the other user's records. A token with
// neither scope is refused as RequireScope(scope) refuses it. It must follow
// Middleware.
func RequireScopeOrSelf(scope, selfScope, param string) gin.HandlerFunc {
	return func(c *gin.Context) {
		claims := FromContext(c)
		switch {
		case claims != nil && claims.HasScope(scope):
			c.Next()
		case claims != nil && claims.UserID != 0 && claims.HasScope(selfScope):
			if id, ok := userid.Parse(c.Param(param)); !ok || id != claims.UserID {
				apireply.Abort(c, apierror.Forbidden("A token with "+selfScope+" may read only its own user's record."))
				return
			}
			c.Next()
		default:
			apireply.Abort(c, apierror.InsufficientScope(scope))
		}
	}
}

// FromContext returns the claims Middleware stored, or nil.
func FromContext(c *gin.Context) *Claims {
	v, ok := c.Get(claimsKey)
	if !ok {
		return nil
	}
	claims, _ := v.(*Claims)
	return claims
}

// Bearer returns the token of an Authorization header value of the Bearer
// scheme (case-insensitive, RFC 6750 §2.1), and false for any other value.
func Bearer(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	tok := strings.TrimSpace(h[len(prefix):])
	return tok, tok != ""
}
