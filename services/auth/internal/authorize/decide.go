package authorize

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/eventreg/eventreg/libs/usersclient"

	"github.com/eventreg/eventreg/services/auth/internal/authmetrics"
	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/session"
)

// Step is what answers a request next.
type Step int

const (
	// SignIn shows the sign-in page.
	SignIn Step = iota + 1
	// Consent shows the consent page.
	Consent
	// Respond sends Outcome.Response to the app.
	Respond
)

// Outcome is the decision on an authorization request.
type Outcome struct {
	Step Step
	// Request is the request as decided: narrowed to what the user may
	// grant, with Withheld (for the consent page).
	Request Request
	// Response is the code, when Step is Respond.
	Response Response
}

// Authorize decides r for the browser's session sess (nil: not signed in):
// sign in, ask consent, or issue a code. With prompt=none, any step that
// would show a page is instead an *Error for the app: login_required,
// consent_required, or interaction_required when the page would be
// anything more than asking consent (decision 0108). Other errors are as
// Parse's, and ErrAccountGone.
func (s *Service) Authorize(ctx context.Context, sess *session.Session, r Request) (Outcome, error) {
	if sess == nil || s.mustSignIn(*sess, r) {
		if r.Prompt.None {
			return Outcome{}, refuse(codeLoginRequired, "the user must sign in")
		}
		return Outcome{Step: SignIn, Request: r}, nil
	}
	r, err := s.mayGrant(ctx, *sess, r)
	if errors.Is(err, ErrAccountGone) && r.Prompt.None {
		return Outcome{}, refuse(codeInteractionRequired, "the user's account is no longer available")
	}
	if err != nil {
		return Outcome{}, err
	}
	prior, err := s.Consents.Get(ctx, sess.UserID, r.Client.ID)
	if err != nil && !errors.Is(err, consent.ErrNotFound) {
		return Outcome{}, fmt.Errorf("reading consent: %w", err)
	}
	if err == nil && consent.Covers(prior, r.Scopes, r.Client.Scopes) && !r.Prompt.Consent {
		resp, err := s.issueCode(ctx, *sess, r)
		return Outcome{Step: Respond, Request: r, Response: resp}, err
	}
	switch {
	case r.Prompt.None && len(r.Withheld) > 0:
		return Outcome{}, refuse(codeInteractionRequired, "the user lacks the permission of a scope asked for: the consent page would narrow the grant")
	case r.Prompt.None:
		return Outcome{}, refuse(codeConsentRequired, "the user must authorize the app")
	}
	return Outcome{Step: Consent, Request: r}, nil
}

// mustSignIn reports whether sess cannot answer r without the user signing
// in (again): prompt=login, a session older than max_age, or another user
// than the id_token_hint names.
func (s *Service) mustSignIn(sess session.Session, r Request) bool {
	return r.Prompt.Login || (r.MaxAge >= 0 && s.now().Sub(sess.CreatedAt) > time.Duration(r.MaxAge)*time.Second) ||
		(r.HintSubject != "" && r.HintSubject != strconv.FormatInt(sess.UserID, 10))
}

// mayGrant narrows r to what the user may grant: a sensitive scope whose
// permission the user lacks is left out and listed in Withheld (RFC 6749
// §3.3: the token response's scope says what was granted; decision 0097,
// as grants are narrowed later by decision 0084). Nothing left is
// invalid_scope. A user who no longer exists is ErrAccountGone, and the
// session ends.
func (s *Service) mayGrant(ctx context.Context, sess session.Session, r Request) (Request, error) {
	perms, err := s.Users.Permissions(ctx, sess.UserID)
	if errors.Is(err, usersclient.ErrNotFound) {
		_ = s.Sessions.Delete(ctx, sess.ID)
		return r, ErrAccountGone
	}
	if err != nil {
		return r, fmt.Errorf("reading the permissions of user %d: %w", sess.UserID, err)
	}
	r.Withheld = r.Scopes.Missing(perms)
	if len(r.Withheld) == 0 {
		return r, nil
	}
	kept := scope.Set{}
	for _, n := range r.Scopes {
		if !slices.Contains(r.Withheld, n) {
			kept = append(kept, n)
		}
	}
	r.Scopes = kept
	if len(r.Scopes) == 0 {
		return r, refuse(codeInvalidScope, "the user may not grant any of the requested scopes")
	}
	return r, nil
}

// Decide applies the user's answer on the consent page, all or nothing:
// denied is access_denied for the app; authorized is remembered (added to
// what the user granted the app before, while the app's approved scopes
// are unchanged) and issues a code.
func (s *Service) Decide(ctx context.Context, sess session.Session, r Request, authorized bool) (Response, error) {
	if !authorized {
		s.Metrics.ConsentDecided(authmetrics.ConsentDenied)
		return Response{}, refuse(codeAccessDenied, "the user denied the request")
	}
	r, err := s.mayGrant(ctx, sess, r)
	if err != nil {
		return Response{}, err
	}
	granted := r.Scopes
	if prior, err := s.Consents.Get(ctx, sess.UserID, r.Client.ID); err == nil && prior.ClientScopes.Equal(r.Client.Scopes) {
		granted = scope.Normalize(append(append([]string{}, prior.Scopes...), r.Scopes...))
	}
	if err := s.Consents.Save(ctx, consent.Consent{UserID: sess.UserID, ClientID: r.Client.ID, Scopes: granted, ClientScopes: r.Client.Scopes}); err != nil {
		return Response{}, fmt.Errorf("saving consent: %w", err)
	}
	s.Metrics.ConsentDecided(authmetrics.ConsentGranted)
	return s.issueCode(ctx, sess, r)
}

// issueCode issues a code for r to the user of sess, bound to the client,
// redirect URI and PKCE challenge, carrying what the ID token needs
// (nonce, auth_time, sid).
func (s *Service) issueCode(ctx context.Context, sess session.Session, r Request) (Response, error) {
	family := grant.NewFamilyID()
	// Reserved first: a revocation from now on withdraws the code.
	if err := s.Families.Reserve(ctx, sess.UserID, r.Client.ID, family, s.Codes.TTL()); err != nil {
		return Response{}, fmt.Errorf("reserving a refresh token family: %w", err)
	}
	code, err := s.Codes.Create(ctx, grant.CodeGrant{ClientID: r.Client.ID, RedirectURI: r.RedirectURI, UserID: sess.UserID,
		Scopes: r.Scopes, Challenge: r.Challenge, Family: family, Nonce: r.Nonce, AuthTime: sess.CreatedAt.Unix(), SID: sess.SID()})
	if err != nil {
		return Response{}, fmt.Errorf("storing a code: %w", err)
	}
	return s.respond(r, url.Values{"code": {code}}), nil
}
