// Package grantapi serves the token side of the authorization server over
// HTTP: the token, revocation and introspection endpoints, the RFC 8414
// metadata and the revocation feed. It parses requests and writes answers;
// the rules are package grant's.
package grantapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/ratelimit"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/authorize"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/idtoken"
	"github.com/eventreg/eventreg/services/auth/internal/pkce"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Paths of the endpoints.
const (
	PathToken      = "/api/oauth/token"
	PathRevoke     = "/api/oauth/revoke"
	PathIntrospect = "/api/oauth/introspect"
	PathMetadata   = "/.well-known/oauth-authorization-server"
	// PathOpenIDConfiguration is OpenID Connect Discovery's document.
	PathOpenIDConfiguration = "/.well-known/openid-configuration"
	// PathUserInfo is OpenID Connect's UserInfo endpoint, which the users
	// service serves (it holds the profiles; the gateway routes /api/users/ there).
	PathUserInfo  = "/api/users/userinfo"
	PathJWKS      = "/.well-known/jwks.json"
	PathAuthorize = "/oauth/authorize"
	PathLogout    = "/oauth/logout"
)

// Handler serves the token side.
type Handler struct {
	Grants *grant.Service
	reply  apireply.Replier
}

// New returns the handler of grants.
func New(grants *grant.Service) *Handler {
	return &Handler{Grants: grants, reply: apireply.Replier{Log: grants.Log}}
}

// Register adds the public routes to public and the service-to-service ones
// to internal.
func (h *Handler) Register(public, internal gin.IRouter) {
	public.POST(PathToken, h.token)
	public.POST(PathRevoke, h.revoke)
	public.POST(PathIntrospect, h.introspect)
	public.GET(PathMetadata, h.metadata)
	public.GET(PathOpenIDConfiguration, h.metadata)
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
	IDToken      string `json:"id_token,omitempty"`
}

func (h *Handler) token(c *gin.Context) {
	p, e := readParams(c)
	if e != nil {
		h.reply.OAuthError(c, e)
		return
	}
	r, e := tokenRequest(p)
	if e != nil {
		h.reply.OAuthError(c, e)
		return
	}
	cl, ok := h.authenticate(c, p)
	if !ok {
		return
	}
	if err := h.Grants.Throttle(c.Request.Context(), h.Grants.TokenRequests, cl, "token requests"); err != nil {
		h.reply.OAuthError(c, err)
		return
	}
	r.Scopes = scope.Parse(p.all("scope")...)
	issued, err := h.Grants.Token(c.Request.Context(), cl, r)
	if err != nil {
		h.reply.OAuthError(c, err)
		return
	}
	noStore(c)
	c.JSON(http.StatusOK, tokenResponse{AccessToken: issued.Access.Token, TokenType: "Bearer",
		ExpiresIn: int64(issued.TTL / time.Second), Scope: issued.Access.Claims.Scope, RefreshToken: issued.Refresh, IDToken: issued.IDToken})
}

// tokenRequest reads the grant type and the single-valued parameters of its
// grant (a repeated one is invalid_request, RFC 6749 §3.2).
func tokenRequest(p params) (grant.Request, *apierror.OAuthError) {
	var r grant.Request
	var e *apierror.OAuthError
	if r.GrantType, e = p.get("grant_type"); e != nil {
		return r, e
	}
	type field struct {
		name string
		dst  *string
	}
	var fields []field
	switch r.GrantType {
	case "":
		return r, apierror.NewOAuth(apierror.OAuthInvalidRequest, "grant_type is required.")
	case grant.TypeClientCredentials:
	case grant.TypeAuthorizationCode:
		fields = []field{{"code", &r.Code}, {"redirect_uri", &r.RedirectURI}, {"code_verifier", &r.Verifier}}
	case grant.TypeRefreshToken:
		// redirect_uri is accepted, as the contract lists it, and not used.
		fields = []field{{"refresh_token", &r.RefreshToken}, {"redirect_uri", new(string)}}
	default:
		return r, apierror.NewOAuth(apierror.OAuthUnsupportedGrantType, "Supported grant types: authorization_code, refresh_token, client_credentials.")
	}
	for _, f := range fields {
		if *f.dst, e = p.get(f.name); e != nil {
			return r, e
		}
	}
	return r, nil
}

// authenticate authenticates the client of the request (grant.Authenticate);
// on failure the answer is written and ok is false.
func (h *Handler) authenticate(c *gin.Context, p params) (client.Client, bool) {
	id, secret, e := p.credentials()
	if e != nil {
		h.reply.OAuthError(c, e)
		return client.Client{}, false
	}
	cl, err := h.Grants.Authenticate(c.Request.Context(), id, secret, ratelimit.AddressKey(c.ClientIP()))
	if err != nil {
		if oe := (*apierror.OAuthError)(nil); errors.As(err, &oe) && oe.Code == apierror.OAuthInvalidClient && p.basic {
			oe.Headers = map[string]string{"WWW-Authenticate": basicChallenge}
		}
		h.reply.OAuthError(c, err)
		return client.Client{}, false
	}
	c.Set(httpserver.LogClientIDKey, strconv.FormatInt(cl.ID, 10))
	return cl, true
}

// tokenParam authenticates the client of a revocation or introspection
// request and returns the required `token` parameter; on failure the error
// has been written and ok is false.
func (h *Handler) tokenParam(c *gin.Context) (cl client.Client, raw string, ok bool) {
	p, e := readParams(c)
	if e != nil {
		h.reply.OAuthError(c, e)
		return cl, "", false
	}
	if cl, ok = h.authenticate(c, p); !ok {
		return cl, "", false
	}
	raw, e = p.get("token")
	if e == nil && raw == "" {
		e = apierror.NewOAuth(apierror.OAuthInvalidRequest, "token is required.")
	}
	if e != nil {
		h.reply.OAuthError(c, e)
		return cl, "", false
	}
	return cl, raw, true
}

func (h *Handler) revoke(c *gin.Context) {
	cl, raw, ok := h.tokenParam(c)
	if !ok {
		return
	}
	if err := h.Grants.Throttle(c.Request.Context(), h.Grants.Revocations, cl, "revocations"); err != nil {
		h.reply.OAuthError(c, err)
		return
	}
	if err := h.Grants.Revoke(c.Request.Context(), cl, raw); err != nil {
		h.reply.OAuthError(c, err)
		return
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
	in, err := h.Grants.Introspect(c.Request.Context(), cl, raw)
	if err != nil {
		h.reply.OAuthError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	switch {
	case in.Refresh != nil:
		c.JSON(http.StatusOK, gin.H{"active": true, "token_type": "refresh_token", "scope": in.Refresh.Granted.String(),
			"client_id": strconv.FormatInt(cl.ID, 10), "sub": accesstoken.UserSubject(in.Refresh.UserID), "iss": h.Grants.Issuer})
	case in.Access != nil:
		claims := in.Access
		c.JSON(http.StatusOK, gin.H{"active": true, "token_type": "Bearer", "scope": claims.Scope, "client_id": claims.ClientID,
			"sub": claims.Subject, "exp": claims.Expiry, "iat": claims.IssuedAt, "iss": claims.Issuer, "aud": claims.Audience, "jti": claims.ID})
	default:
		c.JSON(http.StatusOK, gin.H{"active": false})
	}
}

func noStore(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
}

// metadata serves one document at both addresses: the RFC 8414 server
// metadata and OpenID Connect Discovery's provider metadata (whose fields
// RFC 8414 registers), so the two can never disagree (decision 0101).
func (h *Handler) metadata(c *gin.Context) {
	iss := h.Grants.Issuer
	auth := []string{"client_secret_basic", "client_secret_post"}
	c.Header("Cache-Control", "public, max-age=300")
	c.JSON(http.StatusOK, gin.H{
		"userinfo_endpoint":                              iss + PathUserInfo,
		"subject_types_supported":                        []string{"public"},
		"id_token_signing_alg_values_supported":          client.IDTokenAlgs,
		"claims_supported":                               idtoken.ClaimsSupported,
		"claims_parameter_supported":                     false,
		"request_parameter_supported":                    false,
		"request_uri_parameter_supported":                false,
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + PathAuthorize,
		"token_endpoint":                                 iss + PathToken,
		"jwks_uri":                                       iss + PathJWKS,
		"revocation_endpoint":                            iss + PathRevoke,
		"introspection_endpoint":                         iss + PathIntrospect,
		"end_session_endpoint":                           iss + PathLogout,
		"scopes_supported":                               scope.All(),
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       authorize.ResponseModes,
		"grant_types_supported":                          []string{grant.TypeAuthorizationCode, grant.TypeRefreshToken, grant.TypeClientCredentials},
		"token_endpoint_auth_methods_supported":          auth,
		"revocation_endpoint_auth_methods_supported":     auth,
		"introspection_endpoint_auth_methods_supported":  auth,
		"code_challenge_methods_supported":               []string{pkce.MethodS256},
		"authorization_response_iss_parameter_supported": true,
	})
}
