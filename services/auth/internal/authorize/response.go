package authorize

import (
	"net/url"
	"slices"
)

// Response modes: in the redirect URI's query (RFC 6749 §4.1.2, the code
// flow's default), or posted by the browser as a form (OAuth 2.0 Form Post
// Response Mode).
const (
	ModeQuery    = "query"
	ModeFormPost = "form_post"
)

// ResponseModes are the response modes supported, as the server metadata
// says them.
var ResponseModes = []string{ModeQuery, ModeFormPost}

// validMode reports whether mode ("" for none) is supported.
func validMode(mode string) bool { return mode == "" || slices.Contains(ResponseModes, mode) }

// Response is an authorization response, or an error response, to the app:
// Params sent to RedirectURI in Mode.
type Response struct {
	RedirectURI string
	Mode        string
	// Params are code, or error and error_description; and state (when
	// the request had one) and iss.
	Params url.Values
}

// URL is the redirect URI with Params added to its query (ModeQuery): a
// query the registered URI has is kept (RFC 6749 §3.1.2).
func (r Response) URL() string {
	u, _ := url.Parse(r.RedirectURI)
	q := u.Query()
	for k, v := range r.Params {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// respond is the response to r with params, always with iss: a client
// talking to several authorization servers checks it to tell whose answer
// this is (RFC 9207).
func (s *Service) respond(r Request, params url.Values) Response {
	if r.State != "" {
		params.Set("state", r.State)
	}
	params.Set("iss", s.Issuer)
	return Response{RedirectURI: r.RedirectURI, Mode: r.Mode, Params: params}
}

// ErrorResponse is the error response of e to r (whose client and redirect
// URI Parse trusted).
func (s *Service) ErrorResponse(r Request, e *Error) Response {
	return s.respond(r, url.Values{"error": {e.Code}, "error_description": {e.Description}})
}
