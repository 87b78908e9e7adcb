// Package oauth serves the token side of the authorization server: the token, revocation and introspection endpoints and the RFC 8414 metadata.
package oauth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/httpserver"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/authcode"
	"github.com/eventreg/eventreg/services/auth/internal/authmetrics"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/pkce"
	"github.com/eventreg/eventreg/services/auth/internal/ratelimit"
	"github.com/eventreg/eventreg/services/auth/internal/refreshtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Paths of the endpoints.
const (
	PathToken      = "/api/oauth/token"
	PathRevoke     = "/api/oauth/revoke"
	PathIntrospect = "/api/oauth/introspect"
	PathMetadata   = "/.well-known/oauth-authorization-server"
	PathJWKS       = "/.well-known/jwks.json"
	PathAuthorize  = "/oauth/authorize"
	PathLogout     = "/oauth/logout"
)

// Handler serves the token side.
type Handler struct {
	Clients  *client.Service
	Tokens   *accesstoken.Issuer
	Codes    *authcode.Store
	Refresh  *refreshtoken.Store
	Denylist *refreshtoken.Denylist
	// Users answers which permissions a user holds now (usersapi.Client).
	Users Users
	// ClientFailures counts failed client authentications per client and
	// source address.
	ClientFailures *ratelimit.Failures
	Issuer         string
	Log            *slog.Logger
	// Metrics counts tokens, reuse and failures (nil: not counted).
	Metrics *authmetrics.Metrics
}

// Users is what the token side needs from the users service.
type Users interface {
	// Permissions returns what userID holds now, usersapi.ErrNotFound when
	// the user is gone.
	Permissions(ctx context.Context, userID int64) ([]string, error)
}

// Register adds the public routes to public and the service-to-service ones
// to internal.
func (h *Handler) Register(public, internal gin.IRouter) {
	public.POST(PathToken, h.token)
	public.POST(PathRevoke, h.revoke)
	public.POST(PathIntrospect, h.introspect)
	public.GET(PathMetadata, h.metadata)
	internal.GET(authapi.PathRevocations, h.revocations)
	internal.POST(authapi.PathUserChanged, h.userChanged)
}

// tokenResponse is the body of a successful token request.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token,omitempty"`
}

func unavailable(what string) *apierror.OAuthError {
	e := apierror.NewOAuth(apierror.OAuthTemporarilyUnavailable, what+" is temporarily unavailable; try again shortly.")
	e.Headers = map[string]string{"Retry-After": "1"}
	return e
}

func (h *Handler) fail(c *gin.Context, e *apierror.OAuthError) { apierror.AbortOAuth(c, e) }

// internalError logs err with a hash and answers 503: every failure here is a
// dependency (Redis, PostgreSQL) that could not answer.
func (h *Handler) dependencyError(c *gin.Context, what string, err error) {
	h.Log.WarnContext(c.Request.Context(), "dependency failed", "what", what, "error", err.Error())
	h.fail(c, unavailable(what))
}

// authenticate authenticates the client of the request. A correct secret
// always authenticates; failures are counted per client and source address
// (the id normalized first), and past the limit a failing request is
// refused from memory, without a Redis round trip (the cost is capped, the
// client's access is not).
func (h *Handler) authenticate(c *gin.Context, p params) (client.Client, bool) {
	id, secret, e := p.credentials()
	if e != nil {
		h.fail(c, e)
		return client.Client{}, false
	}
	cl, err := h.Clients.Authenticate(c.Request.Context(), id, secret)
	if err == nil {
		c.Set(httpserver.LogClientIDKey, strconv.FormatInt(cl.ID, 10))
		return cl, true
	}
	if !errors.Is(err, client.ErrAuthFailed) {
		h.dependencyError(c, "The client registry", err)
		return client.Client{}, false
	}
	h.Metrics.ClientAuthFailed(authmetrics.ClientAuthInvalid)
	limitKey := failureKey(id, c.ClientIP())
	if wait, blocked := h.ClientFailures.Blocked(limitKey); blocked {
		h.Metrics.ClientAuthFailed(authmetrics.ClientAuthThrottled)
		h.fail(c, tooMany(wait))
		return client.Client{}, false
	}
	wait, _, rerr := h.ClientFailures.Count(c.Request.Context(), limitKey)
	if rerr != nil {
		h.Log.WarnContext(c.Request.Context(), "counting a client-authentication failure failed", "error", rerr.Error())
	}
	if wait > 0 {
		h.fail(c, tooMany(wait))
		return client.Client{}, false
	}
	e = apierror.NewOAuth(apierror.OAuthInvalidClient, "Client authentication failed: unknown client or wrong secret.")
	if p.basic {
		e.Headers = map[string]string{"WWW-Authenticate": basicChallenge}
	}
	h.fail(c, e)
	return client.Client{}, false
}

// failureKey keys the failures of client id from address: the id in its
// canonical form ("0501" and "501" are one client), or "malformed".
func failureKey(id, address string) string {
	if n, ok := client.ParseID(id); ok {
		return strconv.FormatInt(n, 10) + "|" + address
	}
	return "malformed|" + address
}

func tooMany(wait time.Duration) *apierror.OAuthError {
	secs := int((wait + time.Second - 1) / time.Second)
	e := apierror.NewOAuth(apierror.OAuthSlowDown, "Too many failed client authentications; retry after "+strconv.Itoa(secs)+" seconds.")
	e.Headers = map[string]string{"Retry-After": strconv.Itoa(secs)}
	return e
}

func (h *Handler) token(c *gin.Context) {
	p, e := readParams(c)
	if e != nil {
		h.fail(c, e)
		return
	}
	grant, e := p.get("grant_type")
	if e != nil {
		h.fail(c, e)
		return
	}
	switch grant {
	case "":
		h.fail(c, oauthErr(apierror.OAuthInvalidRequest, "grant_type is required."))
		return
	case "client_credentials", "authorization_code", "refresh_token":
	default:
		h.fail(c, oauthErr(apierror.OAuthUnsupportedGrantType, "Supported grant types: authorization_code, refresh_token, client_credentials."))
		return
	}
	cl, ok := h.authenticate(c, p)
	if !ok {
		return
	}
	var resp tokenResponse
	switch grant {
	case "client_credentials":
		resp, e = h.clientCredentials(c.Request.Context(), cl, p)
	case "authorization_code":
		resp, e = h.authorizationCode(c.Request.Context(), cl, p)
	case "refresh_token":
		resp, e = h.refreshToken(c.Request.Context(), cl, p)
	}
	if e != nil {
		h.fail(c, e)
		return
	}
	h.Metrics.TokenIssued(grant, string(cl.Kind))
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	c.JSON(http.StatusOK, resp)
}

// requestedScopes returns the scopes asked for and whether any were.
func requestedScopes(p params) (scope.Set, bool) {
	s := scope.Parse(p.all("scope")...)
	return s, len(s) > 0
}

func (h *Handler) issue(sub string, cl client.Client, scopes scope.Set, sid string) (accesstoken.Issued, *apierror.OAuthError) {
	tok, err := h.Tokens.Issue(sub, cl.ID, scopes, sid)
	if err != nil {
		h.Log.Error("signing an access token failed", "error", err.Error())
		return tok, unavailable("Token signing")
	}
	return tok, nil
}

func (h *Handler) respond(tok accesstoken.Issued, refresh string) tokenResponse {
	return tokenResponse{AccessToken: tok.Token, TokenType: "Bearer", ExpiresIn: int64(h.Tokens.TTL() / time.Second),
		Scope: tok.Claims.Scope, RefreshToken: refresh}
}

// tokenParam authenticates the client of a revocation or introspection
// request and returns the required `token` parameter; on failure the error
// has been written and ok is false.
func (h *Handler) tokenParam(c *gin.Context) (cl client.Client, raw string, ok bool) {
	p, e := readParams(c)
	if e != nil {
		h.fail(c, e)
		return cl, "", false
	}
	if cl, ok = h.authenticate(c, p); !ok {
		return cl, "", false
	}
	raw, e = p.get("token")
	if e == nil && raw == "" {
		e = oauthErr(apierror.OAuthInvalidRequest, "token is required.")
	}
	if e != nil {
		h.fail(c, e)
		return cl, "", false
	}
	return cl, raw, true
}

func (h *Handler) revoke(c *gin.Context) {
	cl, raw, ok := h.tokenParam(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	if _, isRefresh := refreshtoken.FamilyOfToken(raw); isRefresh {
		fam, err := h.Refresh.Peek(ctx, raw)
		switch {
		case err == nil && fam.ClientID == cl.ID:
			if err := h.Refresh.RevokeFamily(ctx, fam.ID); err != nil {
				h.dependencyError(c, "The token store", err)
				return
			}
		case err != nil && !errors.Is(err, refreshtoken.ErrInvalid):
			h.dependencyError(c, "The token store", err)
			return
		}
	} else if claims, err := h.Tokens.Read(raw); err == nil && claims.ClientID == strconv.FormatInt(cl.ID, 10) {
		if err := h.Denylist.Add(ctx, claims.ID); err != nil {
			h.dependencyError(c, "The token store", err)
			return
		}
	}
	// RFC 7009 §2.2: unknown or foreign tokens are answered 200 too.
	c.Header("Cache-Control", "no-store")
	c.Status(http.StatusOK)
}

func (h *Handler) introspect(c *gin.Context) {
	cl, raw, ok := h.tokenParam(c)
	if !ok {
		return
	}
	c.Header("Cache-Control", "no-store")
	ctx := c.Request.Context()
	inactive := gin.H{"active": false}
	clientID := strconv.FormatInt(cl.ID, 10)
	if _, isRefresh := refreshtoken.FamilyOfToken(raw); isRefresh {
		fam, err := h.Refresh.Peek(ctx, raw)
		if err != nil && !errors.Is(err, refreshtoken.ErrInvalid) {
			h.dependencyError(c, "The token store", err)
			return
		}
		if err != nil || fam.ClientID != cl.ID {
			c.JSON(http.StatusOK, inactive)
			return
		}
		c.JSON(http.StatusOK, gin.H{"active": true, "token_type": "refresh_token", "scope": fam.Granted.String(),
			"client_id": clientID, "sub": accesstoken.UserSubject(fam.UserID), "iss": h.Issuer})
		return
	}
	claims, err := h.Tokens.Read(raw)
	if err != nil || claims.ClientID != clientID {
		c.JSON(http.StatusOK, inactive)
		return
	}
	revoked, err := h.Denylist.Revoked(ctx, claims.ID, claims.SessionID)
	if err != nil {
		h.dependencyError(c, "The token store", err)
		return
	}
	if revoked {
		c.JSON(http.StatusOK, inactive)
		return
	}
	c.JSON(http.StatusOK, gin.H{"active": true, "token_type": "Bearer", "scope": claims.Scope, "client_id": claims.ClientID,
		"sub": claims.Subject, "exp": claims.Expiry, "iat": claims.IssuedAt, "iss": claims.Issuer, "aud": claims.Audience, "jti": claims.ID})
}

func (h *Handler) metadata(c *gin.Context) {
	iss := h.Issuer
	auth := []string{"client_secret_basic", "client_secret_post"}
	c.Header("Cache-Control", "public, max-age=300")
	c.JSON(http.StatusOK, gin.H{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + PathAuthorize,
		"token_endpoint":                                 iss + PathToken,
		"jwks_uri":                                       iss + PathJWKS,
		"revocation_endpoint":                            iss + PathRevoke,
		"introspection_endpoint":                         iss + PathIntrospect,
		"end_session_endpoint":                           iss + PathLogout,
		"scopes_supported":                               scope.All(),
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials"},
		"token_endpoint_auth_methods_supported":          auth,
		"revocation_endpoint_auth_methods_supported":     auth,
		"introspection_endpoint_auth_methods_supported":  auth,
		"code_challenge_methods_supported":               []string{pkce.MethodS256},
		"authorization_response_iss_parameter_supported": true,
	})
}
