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
	"github.com/go-json-experiment/json/jsontext"

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

// Check validates the raw JSON: well-formed, valid UTF-8 (escapes included:
// a lone surrogate such as "\ud800" is refused), nesting at most MaxDepth,
// exactly one value, and no object with the same key twice (compared after
// unescaping, so "a" and "\u0061" are the same key).
//
// The tokenizer is go-json-experiment's jsontext (the proposed
// encoding/json/v2's), whose defaults are RFC 7493's I-JSON rules: it finds
// duplicate names itself and reads tokens without allocating each one.
func Check(body []byte) error {
	if !utf8.Valid(body) {
		return problem("The request body is not valid UTF-8.")
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		if k := dec.PeekKind(); (k == '{' || k == '[') && dec.StackDepth() >= MaxDepth {
			return problemf("The request body nests deeper than %d levels.", MaxDepth)
		}
		if _, err := dec.ReadToken(); err != nil {
			return syntaxProblem(err)
		}
		if dec.StackDepth() == 0 {
			break // one whole value read
		}
	}
	switch _, err := dec.ReadToken(); {
	case err == io.EOF:
		return nil
	case err == nil:
		return problem("The request body holds more than one JSON value.")
	default:
		return syntaxProblem(err)
	}
}

// syntaxProblem turns a jsontext error into the client's message.
func syntaxProblem(err error) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) {
		return problemf("The request body has the key %q twice.", se.JSONPointer.LastToken())
	}
	return problem("The request body is not valid JSON.")
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
