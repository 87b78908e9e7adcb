// Package jsonbody decodes JSON request bodies defensively: size-limited, valid
// UTF-8, bounded nesting, no duplicate keys, and type errors reported by field,
// each as an API error of the documented shape.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
)

// MaxDepth is the deepest nesting of objects and arrays accepted.
const MaxDepth = 32

// Options tune Decode.
type Options struct {
	// EmptyAsObject treats an empty body as "{}" (search endpoints: a first page).
	EmptyAsObject bool
}

// Decode reads the request body into v. It returns nil on success or the API
// error to send.
func Decode(c *gin.Context, v any, opts Options) *apierror.Error {
	if ct := c.GetHeader("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return apierror.UnsupportedMediaType("application/json")
		}
	}
	var body []byte
	if c.Request.Body != nil {
		var err error
		body, err = io.ReadAll(c.Request.Body)
		if err != nil {
			if limit := limitOf(err); limit > 0 {
				return apierror.BodyTooLarge(limit)
			}
			return apierror.Validation("The request body could not be read.", nil)
		}
	}
	return Unmarshal(body, v, opts)
}

// Unmarshal applies Decode's rules to a body already read.
func Unmarshal(body []byte, v any, opts Options) *apierror.Error {
	if len(bytes.TrimSpace(body)) == 0 {
		if !opts.EmptyAsObject {
			return apierror.Validation("A JSON body is required.", nil)
		}
		body = []byte("{}")
	}
	if err := Check(body); err != nil {
		return apierror.Validation(err.Error(), nil)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return apierror.Validation("The request body has a field of the wrong type.",
				map[string]string{te.Field: "must be " + describeType(te.Type.String())})
		}
		return apierror.Validation("The request body is not valid JSON.", nil)
	}
	return nil
}

// Check validates the raw JSON: well-formed, valid UTF-8, nesting at most
// MaxDepth, exactly one value, and no object with the same key twice.
func Check(body []byte) error {
	if !utf8.Valid(body) {
		return problem("The request body is not valid UTF-8.")
	}
	type frame struct {
		object    bool
		expectKey bool
		keys      map[string]struct{}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*frame
	values := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return problem("The request body is not valid JSON.")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				values++
			} else if parent := stack[len(stack)-1]; parent.object {
				parent.expectKey = true
			}
			continue
		}
		if top != nil && top.object && top.expectKey {
			key, _ := tok.(string)
			if _, dup := top.keys[key]; dup {
				return problemf("The request body has the key %q twice.", key)
			}
			top.keys[key] = struct{}{}
			top.expectKey = false
			continue
		}
		if d, ok := tok.(json.Delim); ok { // '{' or '['
			if len(stack) >= MaxDepth {
				return problemf("The request body nests deeper than %d levels.", MaxDepth)
			}
			stack = append(stack, &frame{object: d == '{', expectKey: d == '{', keys: map[string]struct{}{}})
			continue
		}
		// A scalar value.
		if top == nil {
			values++
		} else if top.object {
			top.expectKey = true
		}
	}
	if len(stack) != 0 || values != 1 {
		if values > 1 {
			return problem("The request body holds more than one JSON value.")
		}
		return problem("The request body is not valid JSON.")
	}
	return nil
}

func describeType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"), goType == "json.Number":
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	default:
		return "an object"
	}
}

func limitOf(err error) int64 {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return mbe.Limit
	}
	return 0
}

// problem is a message meant for the client, written as a sentence.
type problem string

func (p problem) Error() string { return string(p) }

func problemf(format string, args ...any) error { return problem(fmt.Sprintf(format, args...)) }
