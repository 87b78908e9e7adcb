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
	Clients        *client.Service
	Tokens         *accesstoken.Issuer
	Codes          *authcode.Store
	Refresh        *refreshtoken.Store
	Denylist       *refreshtoken.Denylist
	ClientFailures *ratelimit.Failures
	Issuer         string
	Log            *slog.Logger
	// Metrics counts tokens, reuse and failures (nil: not counted).
	Metrics *authmetrics.Metrics
}

// Register adds the routes to the public engine.
func (h *Handler) Register(r gin.IRouter) {
	r.POST(PathToken, h.token)
	r.POST(PathRevoke, h.revoke)
	r.POST(PathIntrospect, h.introspect)
	r.GET(PathMetadata, h.metadata)
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

// authenticate authenticates the client of the request, counting failures.
func (h *Handler) authenticate(c *gin.Context, p params) (client.Client, bool) {
	id, secret, e := p.credentials()
	if e != nil {
		h.fail(c, e)
		return client.Client{}, false
	}
	limitKey := id
	if _, ok := client.ParseID(id); !ok {
		limitKey = "malformed"
	}
	if wait, blocked := h.ClientFailures.Blocked(limitKey); blocked {
		h.Metrics.ClientAuthFailed(authmetrics.ClientAuthThrottled)
		h.fail(c, tooMany(wait))
		return client.Client{}, false
	}
	cl, err := h.Clients.Authenticate(c.Request.Context(), id, secret)
	if errors.Is(err, client.ErrAuthFailed) {
		h.Metrics.ClientAuthFailed(authmetrics.ClientAuthInvalid)
		wait, _, rerr := h.ClientFailures.Fail(c.Request.Context(), limitKey)
		if rerr != nil {
			h.Log.WarnContext(c.Request.Context(), "counting a client-authentication failure failed", "error", rerr.Error())
		}
		if wait > 0 {
			h.fail(c, tooMany(wait))
			return client.Client{}, false
		}
		e := apierror.NewOAuth(apierror.OAuthInvalidClient, "Client authentication failed: unknown client or wrong secret.")
		if p.basic {
			e.Headers = map[string]string{"WWW-Authenticate": basicChallenge}
		}
		h.fail(c, e)
		return client.Client{}, false
	}
	if err != nil {
		h.dependencyError(c, "The client registry", err)
		return client.Client{}, false
	}
	c.Set(httpserver.LogClientIDKey, strconv.FormatInt(cl.ID, 10))
	return cl, true
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

func (h *Handler) issue(sub string, cl client.Client, scopes scope.Set) (accesstoken.Issued, *apierror.OAuthError) {
	tok, err := h.Tokens.Issue(sub, cl.ID, scopes)
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

func (h *Handler) clientCredentials(_ context.Context, cl client.Client, p params) (tokenResponse, *apierror.OAuthError) {
	if cl.Kind != client.KindService {
		return tokenResponse{}, oauthErr(apierror.OAuthUnauthorizedClient, "This client acts for users: use the authorization_code grant.")
	}
	allowed := cl.Scopes.WithoutOBO()
	scopes, asked := requestedScopes(p)
	if !asked {
		scopes = allowed
	}
	if e := checkScopes(scopes, allowed, true); e != nil {
		return tokenResponse{}, e
	}
	if len(scopes) == 0 {
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidScope, "The client is approved for no scope usable with client credentials.")
	}
	tok, e := h.issue(accesstoken.ClientSubject(cl.ID), cl, scopes)
	if e != nil {
		return tokenResponse{}, e
	}
	return h.respond(tok, ""), nil
}

// checkScopes refuses unknown scopes, OBO-only ones (when serviceOnly) and
// any not in allowed, naming them.
func checkScopes(asked, allowed scope.Set, serviceOnly bool) *apierror.OAuthError {
	if u := asked.Unknown(); len(u) > 0 {
		return oauthErr(apierror.OAuthInvalidScope, "Unknown scope: "+u[0]+".")
	}
	if serviceOnly {
		if o := asked.OBOOnly(); len(o) > 0 {
			return oauthErr(apierror.OAuthInvalidScope, "The scope "+o[0]+" is only for tokens a user consented to.")
		}
	}
	for _, s := range asked {
		if !allowed.Contains(s) {
			return oauthErr(apierror.OAuthInvalidScope, "The scope "+s+" is not granted to this client.")
		}
	}
	return nil
}

func (h *Handler) authorizationCode(ctx context.Context, cl client.Client, p params) (tokenResponse, *apierror.OAuthError) {
	if cl.Kind != client.KindOBO {
		return tokenResponse{}, oauthErr(apierror.OAuthUnauthorizedClient, "A service client uses the client_credentials grant.")
	}
	code, e := p.get("code")
	if e != nil {
		return tokenResponse{}, e
	}
	redirect, e := p.get("redirect_uri")
	if e != nil {
		return tokenResponse{}, e
	}
	verifier, e := p.get("code_verifier")
	if e != nil {
		return tokenResponse{}, e
	}
	if code == "" || redirect == "" {
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidRequest, "code and redirect_uri are required.")
	}
	challenge := ""
	if verifier != "" {
		if !pkce.ValidVerifier(verifier) {
			return tokenResponse{}, oauthErr(apierror.OAuthInvalidRequest, "code_verifier must be 43 to 128 unreserved characters.")
		}
		challenge = pkce.Challenge(verifier)
	}
	g, err := h.Codes.Redeem(ctx, code, cl.ID, redirect, challenge)
	switch {
	case errors.Is(err, authcode.ErrReplayed):
		// RFC 6749 §4.1.2: revoke what the first redemption issued.
		if jti, rerr := h.Refresh.RevokeFamily(ctx, g.Family); rerr == nil {
			_ = h.Denylist.Add(ctx, jti)
		} else {
			h.Log.WarnContext(ctx, "revoking after a code replay failed", "error", rerr.Error())
		}
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidGrant, "The authorization code was already used; the tokens issued with it are revoked.")
	case errors.Is(err, authcode.ErrInvalid):
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidGrant, "The authorization code is invalid, expired, or was issued to another client, redirect URI or PKCE verifier.")
	case err != nil:
		h.Log.WarnContext(ctx, "redeeming a code failed", "error", err.Error())
		return tokenResponse{}, unavailable("The token store")
	}
	scopes := g.Scopes
	if asked, ok := requestedScopes(p); ok {
		if !asked.SubsetOf(g.Scopes) {
			return tokenResponse{}, oauthErr(apierror.OAuthInvalidScope, "The scope may narrow the authorized scopes, never widen them.")
		}
		scopes = asked
	}
	tok, e := h.issue(accesstoken.UserSubject(g.UserID), cl, scopes)
	if e != nil {
		return tokenResponse{}, e
	}
	refresh, err := h.Refresh.Create(ctx, refreshtoken.Family{ID: g.Family, ClientID: cl.ID, UserID: g.UserID, Granted: g.Scopes, Last: scopes, JTI: tok.Claims.ID})
	if errors.Is(err, refreshtoken.ErrRevoked) {
		// A replay of the code arrived while this, the first redemption, ran:
		// it wins the response, and what it issued is revoked as RFC 6749
		// §4.1.2 asks (the same order of events as a refresh-token reuse).
		_ = h.Denylist.Add(ctx, tok.Claims.ID)
		return h.respond(tok, refresh), nil
	}
	if err != nil {
		h.Log.WarnContext(ctx, "storing a refresh token failed", "error", err.Error())
		return tokenResponse{}, unavailable("The token store")
	}
	return h.respond(tok, refresh), nil
}

func (h *Handler) refreshToken(ctx context.Context, cl client.Client, p params) (tokenResponse, *apierror.OAuthError) {
	if cl.Kind != client.KindOBO {
		return tokenResponse{}, oauthErr(apierror.OAuthUnauthorizedClient, "A service client uses the client_credentials grant.")
	}
	raw, e := p.get("refresh_token")
	if e != nil {
		return tokenResponse{}, e
	}
	if raw == "" {
		return tokenResponse{}, oauthErr(apierror.OAuthInvalidRequest, "refresh_token is required.")
	}
	if _, e := p.get("redirect_uri"); e != nil { // accepted, as the contract lists it, and not used
		return tokenResponse{}, e
	}
	invalid := oauthErr(apierror.OAuthInvalidGrant, "The refresh token is invalid, revoked, or was issued to another client.")
	fam, err := h.Refresh.Peek(ctx, raw)
	if errors.Is(err, refreshtoken.ErrInvalid) {
		// Maybe a rotated token: Rotate detects the reuse and revokes the family.
		if _, jti, rerr := h.Refresh.Rotate(ctx, raw, cl.ID, nil, ""); errors.Is(rerr, refreshtoken.ErrReused) {
			h.Metrics.RefreshReuse()
			_ = h.Denylist.Add(ctx, jti)
		}
		return tokenResponse{}, invalid
	}
	if err != nil {
		h.Log.WarnContext(ctx, "reading a refresh token failed", "error", err.Error())
		return tokenResponse{}, unavailable("The token store")
	}
	if fam.ClientID != cl.ID {
		return tokenResponse{}, invalid
	}
	scopes := fam.Last
	if asked, ok := requestedScopes(p); ok {
		if !asked.SubsetOf(fam.Granted) {
			return tokenResponse{}, oauthErr(apierror.OAuthInvalidScope, "A refresh may narrow the granted scopes, never widen them.")
		}
		scopes = asked
	}
	tok, e := h.issue(accesstoken.UserSubject(fam.UserID), cl, scopes)
	if e != nil {
		return tokenResponse{}, e
	}
	next, jti, err := h.Refresh.Rotate(ctx, raw, cl.ID, scopes, tok.Claims.ID)
	switch {
	case errors.Is(err, refreshtoken.ErrReused):
		h.Metrics.RefreshReuse()
		_ = h.Denylist.Add(ctx, jti, tok.Claims.ID)
		return tokenResponse{}, invalid
	case errors.Is(err, refreshtoken.ErrInvalid), errors.Is(err, refreshtoken.ErrWrongClient):
		return tokenResponse{}, invalid
	case err != nil:
		h.Log.WarnContext(ctx, "rotating a refresh token failed", "error", err.Error())
		return tokenResponse{}, unavailable("The token store")
	}
	return h.respond(tok, next), nil
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
			jti, err := h.Refresh.RevokeFamily(ctx, fam.ID)
			if err != nil {
				h.dependencyError(c, "The token store", err)
				return
			}
			if err := h.Denylist.Add(ctx, jti); err != nil {
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
	revoked, err := h.Denylist.Revoked(ctx, claims.ID)
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
		"authorization_response_iss_parameter_supported": false,
	})
}
