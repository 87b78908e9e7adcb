// Package apierror is the wire shape of errors: the body of the real API
// ({"errors": {"<category>": {...}}}) and, for OAuth endpoints, RFC 6749
// bodies. It knows no transport; libs/apireply writes them.
package apierror

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Categories used under "errors", as the real API names them.
const (
	CategoryAuthentication = "authentication" // 401
	CategoryAccess         = "access"         // 403
	CategoryValidation     = "validation"     // 400, 413, 415
	CategoryLogic          = "logic"          // 409 (a rule of the domain refused the change)
	CategoryResource       = "resource"       // 404, 405
	CategoryRateLimit      = "rateLimit"      // 429
	CategoryServer         = "server"         // 500, 503
)

// Codes carried in bodies. Authentication codes are what real clients key on
// together with the exact messages below.
const (
	CodeInvalidToken        = 2000
	CodeTokenExpired        = 2001
	CodeInsufficientScope   = 3000
	CodeRecordIsReferenced  = 1
	CodeUserWasAlreadyAdded = 3
	// The dealers' logic errors (docs/dealers.md): a status change the
	// application's state machine does not allow, and deleting an application
	// that holds a table.
	CodeCannotChangeDealerStatus = 2
	CodeCannotDeleteApplication  = 4
)

// Messages real clients look for in 401 bodies.
const (
	MessageInvalidToken = "Invalid token."
	MessageTokenExpired = "Token expired."
)

// Error is an API error: an HTTP status, a category and the fields of the body.
type Error struct {
	Status   int
	Category string
	Message  string
	// Code is rendered when non-zero.
	Code int
	// Extra fields rendered beside message and code (e.g. "fields", "permissions").
	Extra map[string]any
	// Headers set on the response (e.g. WWW-Authenticate, Retry-After).
	Headers map[string]string
}

func (e *Error) Error() string { return e.Category + ": " + e.Message }

// Body returns the JSON body of the error.
func (e *Error) Body() map[string]any {
	inner := map[string]any{"message": e.Message}
	if e.Code != 0 {
		inner["code"] = e.Code
	}
	for k, v := range e.Extra {
		inner[k] = v
	}
	return map[string]any{"errors": map[string]any{e.Category: inner}}
}

// Validation is a 400 for bad input. fields maps a field name to what is wrong
// with it and may be nil.
func Validation(message string, fields map[string]string) *Error {
	e := &Error{Status: http.StatusBadRequest, Category: CategoryValidation, Message: message}
	if len(fields) > 0 {
		e.Extra = map[string]any{"fields": fields}
	}
	return e
}

// BodyTooLarge is a 413.
func BodyTooLarge(limit int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Category: CategoryValidation,
		Message: "Request body is larger than " + strconv.FormatInt(limit, 10) + " bytes."}
}

// UnsupportedMediaType is a 415.
func UnsupportedMediaType(want string) *Error {
	return &Error{Status: http.StatusUnsupportedMediaType, Category: CategoryValidation,
		Message: "Content-Type must be " + want + "."}
}

// NotFound is a 404 for an unknown record.
func NotFound(message string) *Error {
	return &Error{Status: http.StatusNotFound, Category: CategoryResource, Message: message}
}

// MethodNotAllowed is a 405.
func MethodNotAllowed() *Error {
	return &Error{Status: http.StatusMethodNotAllowed, Category: CategoryResource, Message: "Method not allowed."}
}

// Conflict is a 409 logic error with one of the real API's logic codes.
func Conflict(code int, message string) *Error {
	return &Error{Status: http.StatusConflict, Category: CategoryLogic, Code: code, Message: message}
}

// Unauthenticated is a 401 with the bearer challenge of RFC 6750. expired picks
// the message "Token expired." over "Invalid token.".
func Unauthenticated(expired bool) *Error {
	code, msg := CodeInvalidToken, MessageInvalidToken
	if expired {
		code, msg = CodeTokenExpired, MessageTokenExpired
	}
	return &Error{Status: http.StatusUnauthorized, Category: CategoryAuthentication, Code: code, Message: msg,
		Headers: map[string]string{"WWW-Authenticate": `Bearer error="invalid_token", error_description="` + msg + `"`}}
}

// MissingToken is the 401 for a request without credentials. Real clients
// expect "Invalid token." here too.
func MissingToken() *Error {
	e := Unauthenticated(false)
	e.Headers = map[string]string{"WWW-Authenticate": `Bearer`}
	return e
}

// InsufficientScope is a 403 naming the scope the route needs.
func InsufficientScope(scope string) *Error {
	return &Error{Status: http.StatusForbidden, Category: CategoryAccess, Code: CodeInsufficientScope,
		Message: "The token lacks the scope " + scope + ".", Extra: map[string]any{"permissions": []string{scope}},
		Headers: map[string]string{"WWW-Authenticate": `Bearer error="insufficient_scope", scope="` + scope + `"`}}
}

// Forbidden is a 403 for a valid token that may not see this record.
func Forbidden(message string) *Error {
	return &Error{Status: http.StatusForbidden, Category: CategoryAccess, Code: CodeInsufficientScope, Message: message}
}

// RateLimited is a 429 with Retry-After in whole seconds (at least 1).
func RateLimited(retryAfter time.Duration) *Error {
	secs := int((retryAfter + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return &Error{Status: http.StatusTooManyRequests, Category: CategoryRateLimit, Message: "Too many requests.",
		Extra: map[string]any{"retryAfter": secs}, Headers: map[string]string{"Retry-After": strconv.Itoa(secs)}}
}

// Unavailable is a 503: a dependency (database, another service) cannot answer.
func Unavailable(what string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Category: CategoryServer,
		Message: what + " is temporarily unavailable; try again shortly.", Extra: map[string]any{"hash": NewHash()},
		Headers: map[string]string{"Retry-After": "1"}}
}

// Dependency is implemented by errors that mean a dependency could not
// answer (svcclient's, usersummary's, DependencyError): every error path
// answers them 503, naming the dependency ("The users service").
type Dependency interface {
	error
	Dependency() string
}

// DependencyError says the dependency What (e.g. "The token store") failed
// with Err.
type DependencyError struct {
	What string
	Err  error
}

// DependencyFailed wraps err as a failure of the dependency what.
func DependencyFailed(what string, err error) error { return &DependencyError{What: what, Err: err} }

func (e *DependencyError) Error() string      { return e.What + ": " + e.Err.Error() }
func (e *DependencyError) Unwrap() error      { return e.Err }
func (e *DependencyError) Dependency() string { return e.What }

// Internal is a 500 carrying an opaque hash to quote to support; the hash is
// also what the server logs next to the real cause.
func Internal(hash string) *Error {
	return &Error{Status: http.StatusInternalServerError, Category: CategoryServer,
		Message: "Internal server error.", Extra: map[string]any{"hash": hash}}
}

// NewHash returns a short random id that ties an error body to a log line.
func NewHash() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
