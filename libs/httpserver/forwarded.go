package httpserver

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// FromTrustedProxy reports whether the peer of c is a trusted proxy
// (TRUSTED_PROXIES, or a unix socket): only then do its forwarding headers
// speak for the client, X-Forwarded-Proto as much as X-Forwarded-For. It
// puts gin the question behind c.ClientIP, with a probe address in place of
// the request's forwarding headers, so that the two never disagree.
func FromTrustedProxy(c *gin.Context) bool {
	probe := "192.0.2.1" // TEST-NET-1: never a real peer
	if c.RemoteIP() == probe {
		probe = "192.0.2.2"
	}
	cp := c.Copy()
	cp.Request = c.Request.WithContext(c.Request.Context())
	cp.Request.Header = http.Header{"X-Forwarded-For": {probe}, "X-Real-Ip": {probe}}
	return cp.ClientIP() == probe
}

// oneForwardingHeader drops X-Real-IP when the request carries
// X-Forwarded-For. gin reads X-Real-IP when its walk of X-Forwarded-For
// from the right stops at an entry that is no address before it finds an
// untrusted one; a proxy that appends to X-Forwarded-For but passes
// X-Real-IP on (Envoy does) would then let the client's own X-Real-IP name
// the client. Without it gin takes the peer, the last hop it can vouch for.
func oneForwardingHeader(c *gin.Context) {
	if len(c.Request.Header.Values("X-Forwarded-For")) > 0 {
		c.Request.Header.Del("X-Real-Ip")
	}
	c.Next()
}
