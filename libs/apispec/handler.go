package apispec

import (
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
)

// Media types of the two renderings.
const (
	ContentTypeJSON = "application/json; charset=utf-8"
	ContentTypeYAML = "application/yaml; charset=utf-8"
)

// rendering is one form of the document with its validator.
type rendering struct {
	body        []byte
	contentType string
	etag        string
}

func newRendering(body []byte, contentType string) rendering {
	sum := sha256.Sum256(body)
	return rendering{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

var renderings = sync.OnceValues(func() (rendering, rendering) {
	return newRendering(jsonDocument(), ContentTypeJSON), newRendering(document, ContentTypeYAML)
})

// Handler serves the document, meant for GET /api/docs (and HEAD). It answers
// JSON unless the query has format=yaml or the Accept header prefers a YAML
// media type over application/json. It sets an ETag and answers 304 to a
// matching If-None-Match.
func Handler() gin.HandlerFunc {
	return func(c *gin.Context) {
		asJSON, asYAML := renderings()
		r := asJSON
		switch format := c.Query("format"); format {
		case "yaml":
			r = asYAML
		case "json":
		case "":
			if prefersYAML(c.GetHeader("Accept")) {
				r = asYAML
			}
		default:
			apireply.Abort(c, apierror.Validation("The query parameter format must be json or yaml.",
				map[string]string{"format": "must be json or yaml"}))
			return
		}
		c.Header("Vary", "Accept")
		c.Header("Cache-Control", "public, max-age=300")
		c.Header("ETag", r.etag)
		if etagMatches(c.GetHeader("If-None-Match"), r.etag) {
			c.Status(http.StatusNotModified)
			c.Writer.WriteHeaderNow()
			return
		}
		c.Data(http.StatusOK, r.contentType, r.body)
	}
}

// yamlTypes are the media types asking for YAML (RFC 9512 and the older ones).
var yamlTypes = map[string]bool{
	"application/yaml":   true,
	"application/x-yaml": true,
	"text/yaml":          true,
	"text/x-yaml":        true,
}

// prefersYAML reports whether the Accept header ranks a YAML media type above
// application/json. Wildcards count for JSON only, the default.
func prefersYAML(accept string) bool {
	var qYAML, qJSON float64
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(s, 64); err == nil {
				q = v
			}
		}
		switch {
		case yamlTypes[mt]:
			qYAML = max(qYAML, q)
		case mt == "application/json" || mt == "application/*" || mt == "*/*":
			qJSON = max(qJSON, q)
		}
	}
	return qYAML > 0 && qYAML > qJSON
}

// etagMatches implements the weak comparison of If-None-Match (RFC 9110, 13.1.2).
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for part := range strings.SplitSeq(header, ",") {
		tag := strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if tag == "*" || tag == etag {
			return true
		}
	}
	return false
}
