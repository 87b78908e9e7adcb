// Package authorize holds the rules of the authorization endpoint (RFC 6749 §4.1, OpenID Connect Core §3.1.2): which requests are valid, when the user must sign in or consent, what a user may grant, remembered consent, the code it issues and how the answer goes back to the app. It speaks no HTTP: pagesapi reads the request and renders the pages and responses.
package authorize

import (
	"context"
	"errors"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/authmetrics"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/idtoken"
)

// Clients looks registered apps up (client.Service).
type Clients interface {
	// Lookup returns the client, client.ErrNotFound when there is none.
	Lookup(ctx context.Context, id int64) (client.Client, error)
}

// Consents keeps what users granted apps (consentdb.Store).
type Consents interface {
	// Get returns the user's consent to the app, consent.ErrNotFound when
	// there is none.
	Get(ctx context.Context, userID, clientID int64) (consent.Consent, error)
	Save(ctx context.Context, c consent.Consent) error
	Delete(ctx context.Context, userID, clientID int64) error
	ListForUser(ctx context.Context, userID int64) ([]consent.Consent, error)
}

// Users answers what a user may grant (usersclient.Client).
type Users interface {
	// Permissions returns what userID holds now, usersclient.ErrNotFound
	// when the user is gone.
	Permissions(ctx context.Context, userID int64) ([]string, error)
}

// Sessions ends the session of a user who is gone (session.Store).
type Sessions interface {
	Delete(ctx context.Context, id string) error
}

// Codes keeps authorization codes (grant/codedb).
type Codes interface {
	Create(ctx context.Context, g grant.CodeGrant) (string, error)
	// TTL is how long a code lives.
	TTL() time.Duration
}

// Families keeps refresh-token families (grant/refreshdb).
type Families interface {
	// Reserve sets family id aside for a code, so that a revocation from
	// then on withdraws the code.
	Reserve(ctx context.Context, userID, clientID int64, id string, ttl time.Duration) error
	// RevokeUserClient ends every family of the user and app.
	RevokeUserClient(ctx context.Context, userID, clientID int64) error
}

// IDTokenHints reads an id_token_hint (idtoken.Issuer).
type IDTokenHints interface {
	ReadHint(raw string) (idtoken.Claims, error)
}

// Service applies the rules.
type Service struct {
	Clients  Clients
	Consents Consents
	Users    Users
	Sessions Sessions
	Codes    Codes
	Families Families
	IDTokens IDTokenHints
	// Issuer is sent as iss with every authorization response (RFC 9207),
	// exactly as in the server metadata.
	Issuer string
	// Metrics counts consent decisions (nil: not counted).
	Metrics *authmetrics.Metrics
	// Now is the clock of max_age (nil: time.Now).
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Error is an error the app is told at its redirect URI (RFC 6749
// §4.1.2.1, OpenID Connect Core §3.1.2.6): Code is the error code.
type Error struct {
	Code, Description string
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

// UntrustedError is a request whose client or redirect URI cannot be
// trusted: answered with the invalid request page, never at the redirect
// URI (RFC 6749 §4.1.2.1). Why says what is wrong, for the user.
type UntrustedError struct{ Why string }

func (e *UntrustedError) Error() string { return "untrusted authorization request: " + e.Why }

// ErrAccountGone means the signed-in user no longer exists; the session is
// ended.
var ErrAccountGone = errors.New("the user's account is no longer available")

// Error codes of OpenID Connect Core §3.1.2.6 and RFC 6749 §4.1.2.1 that
// these rules answer.
const (
	codeInvalidRequest          = "invalid_request"
	codeInvalidScope            = "invalid_scope"
	codeUnsupportedResponseType = "unsupported_response_type"
	codeAccessDenied            = "access_denied"
	codeRequestNotSupported     = "request_not_supported"
	codeLoginRequired           = "login_required"
	codeConsentRequired         = "consent_required"
	codeInteractionRequired     = "interaction_required"
)

func refuse(code, desc string) *Error { return &Error{Code: code, Description: desc} }
