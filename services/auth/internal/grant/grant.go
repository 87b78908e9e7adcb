// Package grant holds the OAuth rules of the token side: one file per grant
// (authorization_code, refresh_token, client_credentials), revocation,
// introspection, what a change of a user's permissions ends and signing a
// user out everywhere, over the token stores. It speaks no HTTP: grantapi parses requests and writes the
// answers.
//
// Errors are of two kinds only. An *apierror.OAuthError is the client's
// (RFC 6749's codes are this domain's vocabulary); an
// *apierror.DependencyError is a store or service that could not answer,
// which every caller answers 503. A family that must end and cannot be
// revoked is the second kind, never ignored: the client's retry revokes it.
package grant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/logging"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/authmetrics"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/idtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/throttle"
)

// Grant types of RFC 6749.
const (
	TypeAuthorizationCode = "authorization_code"
	TypeRefreshToken      = "refresh_token"
	TypeClientCredentials = "client_credentials"
)

// Names of the dependencies in 503s.
const (
	tokenStore     = "The token store"
	clientRegistry = "The client registry"
	usersService   = "The users service"
	tokenSigning   = "Token signing"
)

// Service applies the rules.
type Service struct {
	Clients *client.Service
	Tokens  *accesstoken.Issuer
	// IDTokens signs the ID tokens of grants holding openid.
	IDTokens *idtoken.Issuer
	// The stores (store.go).
	Codes    Codes
	Refresh  Families
	Denylist Denylist
	// Sessions are the browser sessions SignOut ends.
	Sessions Sessions
	// Users answers which permissions a user holds now (usersclient.Client).
	Users Users
	// ClientFailures counts failed client authentications per client and
	// source address.
	ClientFailures *throttle.Failures
	// TokenRequests and Revocations count each client's token and
	// revocation requests (Throttle); nil: not limited.
	TokenRequests, Revocations *throttle.Failures
	Issuer                     string
	Log                        *slog.Logger
	// Metrics counts tokens, reuse and failures (nil: not counted).
	Metrics *authmetrics.Metrics

	// throttleFailing logs Throttle's Redis failures at most once a minute
	// (every token request would log one while Redis is down).
	throttleFailing logging.Recurring
}

// Users is what the token side needs from the users service.
type Users interface {
	// Permissions returns what userID holds now, usersclient.ErrNotFound when
	// the user is gone.
	Permissions(ctx context.Context, userID int64) ([]string, error)
}

// Request is a token request, parsed.
type Request struct {
	GrantType string
	// Code, RedirectURI and Verifier are the authorization_code grant's.
	Code, RedirectURI, Verifier string
	// RefreshToken is the refresh_token grant's.
	RefreshToken string
	// Scopes are the scopes asked for (none: the grant's own).
	Scopes scope.Set
}

// Issued is what a grant issues: an access token and, for a user's grant,
// the family's next refresh token and, when it holds openid, an ID token.
type Issued struct {
	Access  accesstoken.Issued
	Refresh string
	IDToken string
	TTL     time.Duration
}

// Token applies the grant of r for the authenticated client cl.
func (s *Service) Token(ctx context.Context, cl client.Client, r Request) (Issued, error) {
	var (
		out Issued
		err error
	)
	switch r.GrantType {
	case TypeClientCredentials:
		out, err = s.clientCredentials(cl, r.Scopes)
	case TypeAuthorizationCode:
		out, err = s.authorizationCode(ctx, cl, r)
	case TypeRefreshToken:
		out, err = s.refreshToken(ctx, cl, r)
	default:
		err = oauthErr(apierror.OAuthUnsupportedGrantType, "Supported grant types: authorization_code, refresh_token, client_credentials.")
	}
	if err == nil {
		s.Metrics.TokenIssued(r.GrantType, string(cl.Kind))
	}
	return out, err
}

// Authenticate authenticates a client from address. A correct secret always
// authenticates; failures are counted per client and source address (the
// id normalized first), and past the limit a failing request is refused
// from memory, without a Redis round trip (the cost is capped, the client's
// access is not).
func (s *Service) Authenticate(ctx context.Context, id, secret, address string) (client.Client, error) {
	cl, err := s.Clients.Authenticate(ctx, id, secret)
	if err == nil {
		return cl, nil
	}
	if !errors.Is(err, client.ErrAuthFailed) {
		return cl, apierror.DependencyFailed(clientRegistry, err)
	}
	s.Metrics.ClientAuthFailed(authmetrics.ClientAuthInvalid)
	key := failureKey(id, address)
	if wait, blocked := s.ClientFailures.Blocked(key); blocked {
		s.Metrics.ClientAuthFailed(authmetrics.ClientAuthThrottled)
		return cl, tooMany(wait)
	}
	wait, _, cerr := s.ClientFailures.Count(ctx, key)
	if cerr != nil {
		// Counting is best effort: the failure is answered either way.
		s.Log.WarnContext(ctx, "counting a client-authentication failure failed", "error", cerr.Error())
	}
	if wait > 0 {
		return cl, tooMany(wait)
	}
	return cl, oauthErr(apierror.OAuthInvalidClient, "Client authentication failed: unknown client or wrong secret.")
}

// failureKey keys the failures of client id from address: the id in its
// canonical form ("0501" and "501" are one client), or "malformed".
func failureKey(id, address string) string {
	if n, ok := client.ParseID(id); ok {
		return strconv.FormatInt(n, 10) + "|" + address
	}
	return "malformed|" + address
}

// Throttle counts one request of the authenticated client cl against
// limit (TokenRequests or Revocations) and refuses it with slow_down (429,
// Retry-After) past the allowance: minting and revoking cost Redis writes
// and feed entries, so no client may do it without bound. A client over
// the limit is refused from memory; Redis failing or slow lets the request
// through (client credentials work without Redis, and must keep working).
func (s *Service) Throttle(ctx context.Context, limit *throttle.Failures, cl client.Client, what string) error {
	if limit == nil {
		return nil
	}
	key := strconv.FormatInt(cl.ID, 10)
	if wait, blocked := limit.Blocked(key); blocked {
		return tooManyRequests(wait, what)
	}
	cctx, cancel := context.WithTimeout(ctx, throttleBudget)
	defer cancel()
	wait, _, err := limit.Count(cctx, key)
	if err != nil {
		if s.throttleFailing.Due(time.Now()) {
			s.Log.WarnContext(ctx, "counting a client's requests failed; not limiting", "error", err.Error())
		}
		return nil
	}
	if wait > 0 {
		return tooManyRequests(wait, what)
	}
	return nil
}

// throttleBudget bounds Throttle's Redis round trip.
const throttleBudget = 200 * time.Millisecond

func tooManyRequests(wait time.Duration, what string) *apierror.OAuthError {
	return retryAfter(wait, "Too many "+what+" from this client; retry after %d seconds.")
}

func tooMany(wait time.Duration) *apierror.OAuthError {
	return retryAfter(wait, "Too many failed client authentications; retry after %d seconds.")
}

func retryAfter(wait time.Duration, format string) *apierror.OAuthError {
	secs := int((wait + time.Second - 1) / time.Second)
	e := apierror.NewOAuth(apierror.OAuthSlowDown, fmt.Sprintf(format, secs))
	e.Headers = map[string]string{"Retry-After": strconv.Itoa(secs)}
	return e
}

func oauthErr(code, desc string) *apierror.OAuthError { return apierror.NewOAuth(code, desc) }

// issue signs an access token for sub.
func (s *Service) issue(sub string, cl client.Client, scopes scope.Set, sid string) (accesstoken.Issued, error) {
	tok, err := s.Tokens.Issue(sub, cl.ID, scopes, sid)
	if err != nil {
		return tok, apierror.DependencyFailed(tokenSigning, fmt.Errorf("signing an access token: %w", err))
	}
	return tok, nil
}

func (s *Service) issued(tok accesstoken.Issued, refresh string) Issued {
	return Issued{Access: tok, Refresh: refresh, TTL: s.Tokens.TTL()}
}

// identify adds an ID token to out when its access token holds openid
// (OpenID Connect Core §3.1.3.3; on a refresh §12.2: nonce "" there).
func (s *Service) identify(out Issued, cl client.Client, userID int64, authTime int64, nonce, sid string) (Issued, error) {
	if !scope.Parse(out.Access.Claims.Scope).Contains(scope.OpenID) {
		return out, nil
	}
	tok, _, err := s.IDTokens.Issue(idtoken.Request{Alg: cl.IDTokenAlg, Subject: accesstoken.UserSubject(userID),
		ClientID: strconv.FormatInt(cl.ID, 10), AuthTime: authTime, Nonce: nonce, AccessToken: out.Access.Token, SID: sid})
	if err != nil {
		return Issued{}, apierror.DependencyFailed(tokenSigning, err)
	}
	out.IDToken = tok
	return out, nil
}

// revokeFamily ends the family id and, through the denylist, its access
// tokens: the one place a grant revokes, with the one policy (a failure is
// a DependencyError; why says which rule asked).
func (s *Service) revokeFamily(ctx context.Context, id, why string) error {
	if err := s.Refresh.RevokeFamily(ctx, id); err != nil {
		return apierror.DependencyFailed(tokenStore, fmt.Errorf("revoking a family (%s): %w", why, err))
	}
	return nil
}
