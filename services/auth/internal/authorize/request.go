package authorize

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/pkce"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Request is a validated authorization request.
type Request struct {
	Client      client.Client
	RedirectURI string
	State       string
	// Mode is how the response goes back: ModeQuery or ModeFormPost.
	Mode   string
	Scopes scope.Set
	// Challenge is the PKCE code challenge ("" for none).
	Challenge string
	// Withheld are the sensitive scopes asked for whose permission the user
	// lacks: left out of the grant, named on the consent page (set by
	// Authorize).
	Withheld []string
	// Nonce is an OpenID Connect request's, echoed in the ID token.
	Nonce string
	// Prompt, MaxAge (-1: none), HintSubject (the user an id_token_hint
	// names) and LoginHint (for the sign-in form) are OpenID Connect Core
	// §3.1.2.1's.
	Prompt      Prompt
	MaxAge      int64
	HintSubject string
	LoginHint   string
}

// Prompt is the prompt parameter. select_account is accepted and asks
// nothing: a browser has one session.
type Prompt struct {
	None, Login, Consent bool
}

// Bounds of what a request may carry.
const (
	// maxNonce bounds the nonce (it is stored with the code).
	maxNonce     = 512
	maxLoginHint = 320
	// maxMaxAge bounds max_age (ten years); more means nothing more.
	maxMaxAge = 10 * 365 * 24 * 3600
)

// Parse validates the authorization request q. Until the client and its
// redirect URI are trusted an error is an *UntrustedError; after that an
// *Error, to be sent to the app with the returned request (ErrorResponse).
// A store that cannot answer is any other error.
func (s *Service) Parse(ctx context.Context, q url.Values) (Request, error) {
	one := func(name string) (string, bool) {
		v := q[name]
		if len(v) > 1 {
			return "", false
		}
		if len(v) == 0 {
			return "", true
		}
		return v[0], true
	}
	r, err := s.trust(ctx, one)
	if err != nil {
		return r, err
	}
	// The response mode first: every later error goes back in it.
	mode, okMode := one("response_mode")
	okMode = okMode && validMode(mode)
	if okMode && mode != "" {
		r.Mode = mode
	}
	state, okState := one("state")
	r.State = state
	switch {
	case !okState:
		return r, refuse(codeInvalidRequest, "state is repeated")
	case !okMode:
		return r, refuse(codeInvalidRequest, "response_mode must be query or form_post")
	}
	responseType, ok := one("response_type")
	switch {
	case !ok || responseType == "":
		return r, refuse(codeInvalidRequest, "response_type is required")
	case responseType != "code":
		return r, refuse(codeUnsupportedResponseType, "only response_type=code is supported")
	}
	// OpenID Connect Core §6: request objects are not supported.
	if q.Has("request") || q.Has("request_uri") {
		return r, refuse(codeRequestNotSupported, "request objects (request, request_uri) are not supported")
	}
	r.Scopes = scope.Parse(q["scope"]...)
	if len(r.Scopes) == 0 {
		return r, refuse(codeInvalidScope, "scope is required")
	}
	if !r.Scopes.SubsetOf(r.Client.Scopes) {
		return r, refuse(codeInvalidScope, "the app may not ask for one of these scopes")
	}
	challenge, ok1 := one("code_challenge")
	method, ok2 := one("code_challenge_method")
	if !ok1 || !ok2 || pkce.ValidateChallenge(challenge, method) != nil {
		return r, refuse(codeInvalidRequest, "malformed PKCE parameters: send code_challenge with code_challenge_method=S256")
	}
	if challenge == "" && r.Client.RequirePKCE {
		return r, refuse(codeInvalidRequest, "code_challenge required")
	}
	r.Challenge = challenge
	nonce, ok := one("nonce")
	if !ok || len(nonce) > maxNonce {
		return r, refuse(codeInvalidRequest, "nonce is repeated or longer than 512 characters")
	}
	r.Nonce = nonce
	return s.parseOpenID(one, r)
}

// trust returns the request's client and redirect URI once both are
// trusted: a registered app that signs users in, and a redirect URI
// registered for it exactly.
func (s *Service) trust(ctx context.Context, one func(string) (string, bool)) (Request, error) {
	rawID, ok1 := one("client_id")
	redirect, ok2 := one("redirect_uri")
	if !ok1 || !ok2 {
		return Request{}, &UntrustedError{Why: "The client_id or redirect_uri parameter is repeated."}
	}
	id, ok := client.ParseID(rawID)
	if !ok {
		return Request{}, &UntrustedError{Why: "The app is unknown (client_id is missing or malformed)."}
	}
	cl, err := s.Clients.Lookup(ctx, id)
	if errors.Is(err, client.ErrNotFound) {
		return Request{}, &UntrustedError{Why: "The app is unknown."}
	}
	if err != nil {
		return Request{}, fmt.Errorf("reading client %d: %w", id, err)
	}
	if redirect == "" || cl.Kind != client.KindOBO || !cl.HasRedirectURI(redirect) || client.ValidateRedirectURI(redirect) != nil {
		return Request{}, &UntrustedError{Why: "The redirect_uri is not one registered for this app."}
	}
	return Request{Client: cl, RedirectURI: redirect, Mode: ModeQuery, MaxAge: -1}, nil
}

// promptValues are the prompt values of Core §3.1.2.1.
var promptValues = map[string]bool{"none": true, "login": true, "consent": true, "select_account": true}

// parseOpenID reads the OpenID Connect authentication parameters into r;
// ui_locales, claims_locales, display and acr_values are ignored.
func (s *Service) parseOpenID(one func(string) (string, bool), r Request) (Request, error) {
	raw, ok := one("prompt")
	values := strings.Fields(raw)
	for _, v := range values {
		ok = ok && promptValues[v]
	}
	r.Prompt = Prompt{None: slices.Contains(values, "none"), Login: slices.Contains(values, "login"), Consent: slices.Contains(values, "consent")}
	if !ok || (r.Prompt.None && len(values) > 1) {
		return r, refuse(codeInvalidRequest, "prompt is repeated, unknown, or none with another value")
	}
	if raw, ok = one("max_age"); !ok {
		return r, refuse(codeInvalidRequest, "max_age is repeated")
	}
	if raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 || n > maxMaxAge {
			return r, refuse(codeInvalidRequest, "max_age must be a number of seconds")
		}
		r.MaxAge = n
	}
	if raw, ok = one("id_token_hint"); !ok {
		return r, refuse(codeInvalidRequest, "id_token_hint is repeated")
	}
	if raw != "" {
		hint, err := s.IDTokens.ReadHint(raw)
		if err != nil {
			return r, refuse(codeInvalidRequest, "id_token_hint is not an ID token of this server")
		}
		r.HintSubject = hint.Subject
	}
	if r.LoginHint, ok = one("login_hint"); !ok || len(r.LoginHint) > maxLoginHint {
		return r, refuse(codeInvalidRequest, "login_hint is repeated or too long")
	}
	return r, nil
}

// AfterSignIn is the authorization request q to come back to after signing
// in: without prompt=login, max_age and id_token_hint, which the sign-in
// just satisfied (kept, they would ask again for ever).
func AfterSignIn(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	var keep []string
	for _, v := range strings.Fields(out.Get("prompt")) {
		if v != "login" {
			keep = append(keep, v)
		}
	}
	out.Del("prompt")
	if len(keep) > 0 {
		out.Set("prompt", strings.Join(keep, " "))
	}
	out.Del("max_age")
	out.Del("id_token_hint")
	return out
}
