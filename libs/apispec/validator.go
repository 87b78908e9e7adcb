package apispec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Validator checks requests and responses against the document. It is meant
// for tests; it is safe for concurrent use.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	opts   *openapi3filter.Options
}

// registerDecoders teaches openapi3filter the media types of the document it
// does not know: the HTML of the browser pages is validated as plain text.
var registerDecoders = sync.OnceFunc(func() {
	if openapi3filter.RegisteredBodyDecoder("text/html") == nil {
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	}
})

// NewValidator loads the document and builds a router over its paths. Routes
// match on method and path only, whatever the scheme and host of the request,
// so it works against httptest servers, the gateway and absolute URLs alike.
func NewValidator() (*Validator, error) {
	registerDecoders()
	doc, err := Load(context.Background())
	if err != nil {
		return nil, err
	}
	// The servers entry would restrict matching to its host and base path.
	doc.Servers = nil
	for _, item := range doc.Paths.Map() {
		item.Servers = nil
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("building the router of the OpenAPI document: %w", err)
	}
	return &Validator{
		doc:    doc,
		router: router,
		opts: &openapi3filter.Options{
			// Tokens are the services' business; the document's security
			// requirements are treated as satisfied.
			AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
			IncludeResponseStatus: true,
			// Validation must not change the request it looks at.
			SkipSettingDefaults: true,
		},
	}, nil
}

// Doc returns the validator's copy of the document (servers removed). Do not
// change it.
func (v *Validator) Doc() *openapi3.T { return v.doc }

// ValidateRequest checks a request (path, query, headers, body) against the
// operation it addresses. It reads the body and puts it back.
func (v *Validator) ValidateRequest(req *http.Request) error {
	route, params, err := v.find(req)
	if err != nil {
		return err
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: v.opts}
	if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
		return shorten(fmt.Errorf("request %s %s: %w", req.Method, req.URL.Path, err))
	}
	return nil
}

// ValidateResponse checks a response to req: its status must be documented for
// the operation, and its headers, content type and body must match. A status
// documented without content must come with an empty body.
func (v *Validator) ValidateResponse(req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := v.find(req)
	if err != nil {
		return err
	}
	if header == nil {
		header = http.Header{}
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: v.opts}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: v.opts}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		return shorten(fmt.Errorf("response %d to %s %s: %w", status, req.Method, req.URL.Path, err))
	}
	if req.Method != http.MethodHead {
		if resp := route.Operation.Responses.Status(status); resp != nil && resp.Value != nil &&
			len(resp.Value.Content) == 0 && len(bytes.TrimSpace(body)) > 0 {
			return fmt.Errorf("response %d to %s %s: the document gives this status no body, got %d bytes",
				status, req.Method, req.URL.Path, len(body))
		}
	}
	return nil
}

// ValidateHTTPResponse is ValidateResponse for a response from an http.Client
// (resp.Request must be set). It reads the body and puts it back.
func (v *Validator) ValidateHTTPResponse(resp *http.Response) error {
	if resp.Request == nil {
		return errors.New("validating a response: it carries no request")
	}
	var body []byte
	if resp.Body != nil {
		var err error
		body, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Errorf("reading the response to %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return v.ValidateResponse(resp.Request, resp.StatusCode, resp.Header, body)
}

func (v *Validator) find(req *http.Request) (*routers.Route, map[string]string, error) {
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s is not an operation of the API document: %w", req.Method, req.URL.Path, err)
	}
	return route, params, nil
}

// maxErrorLen bounds the message of a validation error: kin-openapi quotes the
// offending value, which for a page of 100 records drowns the reason.
const maxErrorLen = 4000

// shortenedError keeps the full error for errors.As while printing less.
type shortenedError struct {
	msg string
	err error
}

func (e *shortenedError) Error() string { return e.msg }
func (e *shortenedError) Unwrap() error { return e.err }

func shorten(err error) error {
	msg := err.Error()
	if len(msg) <= maxErrorLen {
		return err
	}
	return &shortenedError{msg: msg[:maxErrorLen] + fmt.Sprintf("... (%d more bytes)", len(msg)-maxErrorLen), err: err}
}
