// Package browser serves the browser side of the authorization server: the authorization endpoint with its login and consent pages, logout, and the user's list of authorized apps.
package browser

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/usersclient"

	"github.com/eventreg/eventreg/services/auth/internal/authcode"
	"github.com/eventreg/eventreg/services/auth/internal/authmetrics"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/idtoken"
	"github.com/eventreg/eventreg/services/auth/internal/pkce"
	"github.com/eventreg/eventreg/services/auth/internal/refreshtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
	"github.com/eventreg/eventreg/services/auth/internal/session"
	"github.com/eventreg/eventreg/services/auth/internal/throttle"
)

// Users is what the pages need from the users service (usersclient.Client).
type Users interface {
	Verify(ctx context.Context, username, password string) (int64, error)
	Permissions(ctx context.Context, userID int64) ([]string, error)
}

// Config are the settings of the pages.
type Config struct {
	OrgName, OrgLogoURL string
	// SecureCookies forces the Secure attribute (an https issuer).
	SecureCookies bool
	// CSRFKey keys the CSRF tokens (an HMAC-SHA256 key); the same on every replica.
	CSRFKey []byte
	// FailureDelay slows the answer to a failed login once half of the
	// allowed failures are used.
	FailureDelay time.Duration
	// Issuer is sent as iss with every authorization response (RFC 9207),
	// exactly as in the server metadata.
	Issuer string
}

// Deps are the parts the pages use.
type Deps struct {
	Clients  *client.Service
	Consents consent.Store
	Users    Users
	Sessions *session.Store
	Codes    *authcode.Store
	Refresh  *refreshtoken.Store
	// Hints reads the access_token an app sends to the logout.
	Hints TokenHints
	// IDTokens reads the id_token_hint of an authentication request.
	IDTokens *idtoken.Issuer
	// Sign-in attempts are counted before the password is checked, against
	// the identifier as typed (accountKey). Over
	// AccountAddressFailures (per account and client address) or
	// AddressFailures (per client address) sign-in is refused for a while.
	// Over AccountFailures (per account from any address) it is refused
	// too, but only from addresses the account has not signed in from
	// within LOGIN_KNOWN_ADDRESS_TTL (KnownAddresses): guesses spread over
	// many addresses get that budget and no more, and a stranger cannot lock
	// the user out of the places he signs in from (decision 0091).
	AccountAddressFailures *throttle.Failures
	AddressFailures        *throttle.Failures
	AccountFailures        *throttle.Failures
	KnownAddresses         *throttle.Known
	Log                    *slog.Logger
	// Metrics counts failed sign-ins and consent decisions (nil: not counted).
	Metrics *authmetrics.Metrics
}

// Handler serves the pages.
type Handler struct {
	Deps
	pages         *pages
	org           Org
	secureCookies bool
	csrfKey       []byte
	failureDelay  time.Duration
	issuer        string
	log           *slog.Logger
}

// New returns the pages' handler.
func New(cfg Config, deps Deps) (*Handler, error) {
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Handler{Deps: deps, pages: p, org: Org{Name: cfg.OrgName, LogoURL: template.URL(cfg.OrgLogoURL)},
		secureCookies: cfg.SecureCookies, csrfKey: append([]byte(nil), cfg.CSRFKey...), failureDelay: cfg.FailureDelay, issuer: cfg.Issuer, log: deps.Log}, nil
}

// PathLogin is the sign-in page and its form's target. Its POST is bound by
// USERS_TIMEOUT (the password check) plus LOGIN_FAILURE_DELAY (the slow-down
// of a failed guess), not by the server's REQUEST_TIMEOUT: serve exempts it,
// so that neither is cut short.
const PathLogin = "/oauth/login"

// Register adds the routes under /oauth to r.
func (h *Handler) Register(r gin.IRouter) {
	g := r.Group("/oauth", securityHeaders)
	g.GET("/authorize", h.authorize)
	g.POST("/authorize", h.decide)
	g.GET(strings.TrimPrefix(PathLogin, "/oauth"), h.loginPage)
	g.POST(strings.TrimPrefix(PathLogin, "/oauth"), h.login)
	g.GET("/logout", h.logout)
	g.POST("/logout", h.logoutConfirmed)
	g.GET("/apps", h.apps)
	g.POST("/apps/revoke", h.revokeApp)
	g.StaticFS("/static", http.FS(Static()))
}

// request is a validated authorization request.
type request struct {
	client    client.Client
	redirect  string
	state     string
	scopes    scope.Set
	challenge string
	// withheld are the sensitive scopes asked for whose permission the user
	// lacks: left out of the grant (mayGrant), named on the consent page.
	withheld []string
	// nonce is an OpenID Connect request's, echoed in the ID token.
	nonce string
	// OpenID Connect Core §3.1.2.1: prompt values, max_age (-1: none),
	// the user an id_token_hint names, and a login_hint for the login form.
	prompt    map[string]bool
	maxAge    int64
	hintSub   string
	loginHint string
}

// maxNonce bounds the nonce an app may send (it is stored with the code).
const maxNonce = 512

// parse validates an authorization request. It renders the error page (no
// redirect) while the client or redirect URI is not trusted, and redirects
// with an error after that. ok is false when it answered.
func (h *Handler) parse(c *gin.Context) (request, bool) {
	q := c.Request.URL.Query()
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
	rawID, ok1 := one("client_id")
	redirect, ok2 := one("redirect_uri")
	if !ok1 || !ok2 {
		h.invalidRequest(c, "The client_id or redirect_uri parameter is repeated.")
		return request{}, false
	}
	id, ok := client.ParseID(rawID)
	if !ok {
		h.invalidRequest(c, "The app is unknown (client_id is missing or malformed).")
		return request{}, false
	}
	cl, err := h.Clients.Lookup(c.Request.Context(), id)
	if errors.Is(err, client.ErrNotFound) {
		h.invalidRequest(c, "The app is unknown.")
		return request{}, false
	}
	if err != nil {
		h.log.WarnContext(c.Request.Context(), "reading client failed", "error", err.Error())
		h.unavailable(c)
		return request{}, false
	}
	if redirect == "" || cl.Kind != client.KindOBO || !cl.HasRedirectURI(redirect) || client.ValidateRedirectURI(redirect) != nil {
		h.invalidRequest(c, "The redirect_uri is not one registered for this app.")
		return request{}, false
	}
	state, okState := one("state")
	r := request{client: cl, redirect: redirect, state: state}
	if !okState {
		h.redirectError(c, r, "invalid_request", "state is repeated")
		return r, false
	}
	responseType, ok := one("response_type")
	switch {
	case !ok || responseType == "":
		h.redirectError(c, r, "invalid_request", "response_type is required")
		return r, false
	case responseType != "code":
		h.redirectError(c, r, "unsupported_response_type", "only response_type=code is supported")
		return r, false
	}
	// OpenID Connect Core §6: request objects are not supported; §3.1.2.1:
	// only the code flow's default response mode.
	if q.Has("request") || q.Has("request_uri") {
		h.redirectError(c, r, "request_not_supported", "request objects (request, request_uri) are not supported")
		return r, false
	}
	if mode, ok := one("response_mode"); !ok || (mode != "" && mode != "query") {
		h.redirectError(c, r, "invalid_request", "only response_mode=query is supported")
		return r, false
	}
	r.scopes = scope.Parse(q["scope"]...)
	if len(r.scopes) == 0 {
		h.redirectError(c, r, "invalid_scope", "scope is required")
		return r, false
	}
	if !r.scopes.SubsetOf(cl.Scopes) {
		h.redirectError(c, r, "invalid_scope", "the app may not ask for one of these scopes")
		return r, false
	}
	challenge, ok1 := one("code_challenge")
	method, ok2 := one("code_challenge_method")
	if !ok1 || !ok2 || pkce.ValidateChallenge(challenge, method) != nil {
		h.redirectError(c, r, "invalid_request", "malformed PKCE parameters: send code_challenge with code_challenge_method=S256")
		return r, false
	}
	if challenge == "" && cl.RequirePKCE {
		h.redirectError(c, r, "invalid_request", "code_challenge required")
		return r, false
	}
	r.challenge = challenge
	nonce, ok := one("nonce")
	if !ok || len(nonce) > maxNonce {
		h.redirectError(c, r, "invalid_request", "nonce is repeated or longer than 512 characters")
		return r, false
	}
	r.nonce = nonce
	return r, h.parseOpenID(c, one, &r)
}

// Prompt values (Core §3.1.2.1). select_account is accepted and needs
// nothing: a browser has one session.
var promptValues = map[string]bool{"none": true, "login": true, "consent": true, "select_account": true}

// parseOpenID reads the OpenID Connect authentication parameters into r;
// ui_locales, claims_locales, display and acr_values are ignored. It
// answers (and returns false) when one is malformed.
func (h *Handler) parseOpenID(c *gin.Context, one func(string) (string, bool), r *request) bool {
	raw, ok := one("prompt")
	r.prompt = map[string]bool{}
	for _, v := range strings.Fields(raw) {
		ok = ok && promptValues[v]
		r.prompt[v] = true
	}
	if !ok || (r.prompt["none"] && len(r.prompt) > 1) {
		h.redirectError(c, *r, "invalid_request", "prompt is repeated, unknown, or none with another value")
		return false
	}
	r.maxAge = -1
	if raw, ok = one("max_age"); !ok {
		h.redirectError(c, *r, "invalid_request", "max_age is repeated")
		return false
	}
	if raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 || n > maxMaxAge {
			h.redirectError(c, *r, "invalid_request", "max_age must be a number of seconds")
			return false
		}
		r.maxAge = n
	}
	if raw, ok = one("id_token_hint"); !ok {
		h.redirectError(c, *r, "invalid_request", "id_token_hint is repeated")
		return false
	}
	if raw != "" {
		hint, err := h.IDTokens.ReadHint(raw)
		if err != nil {
			h.redirectError(c, *r, "invalid_request", "id_token_hint is not an ID token of this server")
			return false
		}
		r.hintSub = hint.Subject
	}
	if r.loginHint, ok = one("login_hint"); !ok || len(r.loginHint) > 320 {
		h.redirectError(c, *r, "invalid_request", "login_hint is repeated or too long")
		return false
	}
	return true
}

// maxMaxAge bounds max_age (ten years); more means nothing more.
const maxMaxAge = 10 * 365 * 24 * 3600

// mustSignIn reports whether sess cannot answer r without the user signing
// in (again): prompt=login, a session older than max_age, or another user
// than the id_token_hint names.
func (h *Handler) mustSignIn(sess *session.Session, r request) bool {
	return r.prompt["login"] || (r.maxAge >= 0 && time.Since(sess.CreatedAt) > time.Duration(r.maxAge)*time.Second) ||
		(r.hintSub != "" && r.hintSub != strconv.FormatInt(sess.UserID, 10))
}

// afterSignIn is the authorization request to come back to after signing
// in: without prompt=login, max_age and id_token_hint, which the sign-in
// just satisfied (kept, they would ask again for ever).
func afterSignIn(u *url.URL) string {
	q := u.Query()
	var keep []string
	for _, v := range strings.Fields(q.Get("prompt")) {
		if v != "login" {
			keep = append(keep, v)
		}
	}
	q.Del("prompt")
	if len(keep) > 0 {
		q.Set("prompt", strings.Join(keep, " "))
	}
	q.Del("max_age")
	q.Del("id_token_hint")
	return u.Path + "?" + q.Encode()
}

// redirectTo sends the browser back to the app with params (302 after a GET,
// 303 after a POST), always with iss: a client talking to several
// authorization servers checks it to tell whose answer this is (RFC 9207).
func (h *Handler) redirectTo(c *gin.Context, r request, params url.Values) {
	u, _ := url.Parse(r.redirect)
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if r.state != "" {
		q.Set("state", r.state)
	}
	q.Set("iss", h.issuer)
	u.RawQuery = q.Encode()
	status := http.StatusFound
	if c.Request.Method == http.MethodPost {
		status = http.StatusSeeOther
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(status, u.String())
}

func (h *Handler) redirectError(c *gin.Context, r request, code, desc string) {
	h.redirectTo(c, r, url.Values{"error": {code}, "error_description": {desc}})
}

// currentSession returns the browser's session, nil when it has none.
func (h *Handler) currentSession(c *gin.Context) (*session.Session, error) {
	id, err := h.cookie(c, sessionCookie)
	if err != nil || id == "" {
		return nil, nil
	}
	s, err := h.Sessions.Get(c.Request.Context(), id)
	if errors.Is(err, session.ErrNone) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func (h *Handler) authorize(c *gin.Context) {
	r, ok := h.parse(c)
	if !ok {
		return
	}
	sess, err := h.currentSession(c)
	if err != nil {
		h.log.WarnContext(c.Request.Context(), "reading session failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	if sess == nil || h.mustSignIn(sess, r) {
		if r.prompt["none"] {
			h.redirectError(c, r, "login_required", "the user must sign in")
			return
		}
		h.renderLogin(c, http.StatusOK, afterSignIn(c.Request.URL), r.client.Name, r.loginHint, "")
		return
	}
	r, ok = h.mayGrant(c, sess, r)
	if !ok {
		return
	}
	prior, err := h.Consents.Get(c.Request.Context(), sess.UserID, r.client.ID)
	if err != nil && !errors.Is(err, consent.ErrNotFound) {
		h.log.WarnContext(c.Request.Context(), "reading consent failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	if err == nil && consent.Covers(prior, r.scopes, r.client.Scopes) && !r.prompt["consent"] {
		h.issueCode(c, sess, r)
		return
	}
	if r.prompt["none"] {
		h.redirectError(c, r, "consent_required", "the user must authorize the app")
		return
	}
	h.renderConsent(c, r)
}

// mayGrant narrows r to what the user may grant: a sensitive scope whose
// permission the user lacks is left out (RFC 6749 §3.3: the token response's
// scope says what was granted; decision 0097, as grants are narrowed later
// by decision 0084). Nothing left redirects to the app with invalid_scope.
// A user who no longer exists gets the invalid request page.
func (h *Handler) mayGrant(c *gin.Context, sess *session.Session, r request) (request, bool) {
	perms, err := h.Users.Permissions(c.Request.Context(), sess.UserID)
	if errors.Is(err, usersclient.ErrNotFound) {
		_ = h.Sessions.Delete(c.Request.Context(), sess.ID)
		h.setCookie(c, sessionCookie, "", -1)
		h.invalidRequest(c, "Your account is no longer available.")
		return r, false
	}
	if err != nil {
		h.log.WarnContext(c.Request.Context(), "reading permissions failed", "error", err.Error())
		h.unavailable(c)
		return r, false
	}
	r.withheld = r.scopes.Missing(perms)
	if len(r.withheld) == 0 {
		return r, true
	}
	kept := scope.Set{}
	for _, n := range r.scopes {
		if !slices.Contains(r.withheld, n) {
			kept = append(kept, n)
		}
	}
	r.scopes = kept
	if len(r.scopes) == 0 {
		h.redirectError(c, r, "invalid_scope", "the user may not grant any of the requested scopes")
		return r, false
	}
	return r, true
}

type scopeView struct {
	Name, Description string
	Sensitive         bool
}

func (h *Handler) renderConsent(c *gin.Context, r request) {
	var views []scopeView
	sensitive := false
	for _, n := range r.scopes {
		s, _ := scope.Lookup(n)
		views = append(views, scopeView{Name: n, Description: s.Description, Sensitive: s.Sensitive})
		sensitive = sensitive || s.Sensitive
	}
	h.render(c, http.StatusOK, h.pages.consent, map[string]any{
		"Title": "Authorize " + r.client.Name, "ClientName": r.client.Name, "ClientDescription": r.client.Description,
		"Scopes": views, "AnySensitive": sensitive, "Withheld": withheldViews(r.withheld), "CSRF": h.csrfToken(c), "Action": c.Request.URL.Path + "?" + c.Request.URL.RawQuery,
	})
}

// withheldViews describe the scopes the user cannot grant.
func withheldViews(names []string) []scopeView {
	var out []scopeView
	for _, n := range names {
		s, _ := scope.Lookup(n)
		out = append(out, scopeView{Name: n, Description: s.Description, Sensitive: s.Sensitive})
	}
	return out
}

// decide handles the consent form: Authorize or Deny, all or nothing.
func (h *Handler) decide(c *gin.Context) {
	r, ok := h.parse(c)
	if !ok {
		return
	}
	if !h.csrfValid(c) {
		h.csrfFailed(c)
		return
	}
	sess, err := h.currentSession(c)
	if err != nil {
		h.unavailable(c)
		return
	}
	if sess == nil {
		c.Redirect(http.StatusSeeOther, c.Request.URL.RequestURI())
		return
	}
	switch c.PostForm("decision") {
	case "deny":
		h.Metrics.ConsentDecided(authmetrics.ConsentDenied)
		h.redirectError(c, r, "access_denied", "the user denied the request")
		return
	case "authorize":
	default:
		h.invalidRequest(c, "The form did not say Authorize or Deny.")
		return
	}
	r, ok = h.mayGrant(c, sess, r)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	granted := r.scopes
	if prior, err := h.Consents.Get(ctx, sess.UserID, r.client.ID); err == nil && prior.ClientScopes.Equal(r.client.Scopes) {
		granted = scope.Normalize(append(append([]string{}, prior.Scopes...), r.scopes...))
	}
	if err := h.Consents.Save(ctx, consent.Consent{UserID: sess.UserID, ClientID: r.client.ID, Scopes: granted, ClientScopes: r.client.Scopes}); err != nil {
		h.log.WarnContext(ctx, "saving consent failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	h.Metrics.ConsentDecided(authmetrics.ConsentGranted)
	h.issueCode(c, sess, r)
}

func (h *Handler) issueCode(c *gin.Context, sess *session.Session, r request) {
	family := refreshtoken.NewFamilyID()
	// Reserved first: a revocation from now on withdraws the code.
	if err := h.Refresh.Reserve(c.Request.Context(), sess.UserID, r.client.ID, family, h.Codes.TTL()); err != nil {
		h.log.WarnContext(c.Request.Context(), "reserving a refresh token family failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	code, err := h.Codes.Create(c.Request.Context(), authcode.Grant{ClientID: r.client.ID, RedirectURI: r.redirect, UserID: sess.UserID,
		Scopes: r.scopes, Challenge: r.challenge, Family: family, Nonce: r.nonce, AuthTime: sess.CreatedAt.Unix(), SID: sess.SID()})
	if err != nil {
		h.log.WarnContext(c.Request.Context(), "storing code failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	h.redirectTo(c, r, url.Values{"code": {code}})
}

// safeNext keeps a post-login destination on this server's pages.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/oauth/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/oauth/apps"
	}
	return next
}

func (h *Handler) renderLogin(c *gin.Context, status int, next, clientName, username, msg string) {
	h.render(c, status, h.pages.login, map[string]any{"Title": "Sign in", "CSRF": h.csrfToken(c), "Next": safeNext(next),
		"ClientName": clientName, "Username": username, "Error": msg})
}

func (h *Handler) loginPage(c *gin.Context) {
	h.renderLogin(c, http.StatusOK, c.Query("next"), "", "", "")
}

const badCredentials = "The username or password is incorrect."

func (h *Handler) tooManyAttempts(c *gin.Context, wait time.Duration) {
	secs := int((wait + time.Second - 1) / time.Second)
	c.Header("Retry-After", strconv.Itoa(secs))
	h.message(c, http.StatusTooManyRequests, "Too many attempts", "Too many sign-in attempts", "Sign-in is paused after repeated failures.",
		"Please wait "+strconv.Itoa((secs+59)/60)+" minute(s) and try again.")
}

func (h *Handler) login(c *gin.Context) {
	ctx := c.Request.Context()
	next := safeNext(c.PostForm("next"))
	username := strings.TrimSpace(c.PostForm("username"))
	password := c.PostForm("password")
	if !h.csrfValid(c) {
		h.csrfFailed(c)
		return
	}
	if username == "" || password == "" || len(username) > 320 || len(password) > 1024 {
		h.renderLogin(c, http.StatusBadRequest, next, "", username, badCredentials)
		return
	}
	account := accountKey(username)
	address := ratelimit.AddressKey(c.ClientIP())
	counted, wait, slow, err := h.countAttempt(ctx, account, address)
	if err != nil {
		h.log.WarnContext(ctx, "login rate limit unavailable", "error", err.Error())
		h.unavailable(c)
		return
	}
	if wait > 0 {
		h.tooManyAttempts(c, wait)
		return
	}
	userID, err := h.Users.Verify(ctx, username, password)
	if errors.Is(err, usersclient.ErrBadCredentials) {
		h.Metrics.LoginFailed()
		h.loginFailed(c, next, username, slow)
		return
	}
	// Not a wrong guess: the attempt does not count against anyone.
	h.refund(ctx, counted)
	if err != nil {
		h.log.WarnContext(ctx, "verifying credentials failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	if old, err := h.cookie(c, sessionCookie); err == nil {
		_ = h.Sessions.Delete(ctx, old)
	}
	sess, err := h.Sessions.Create(ctx, userID)
	if err != nil {
		h.log.WarnContext(ctx, "creating session failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	if err := h.KnownAddresses.Add(ctx, account+"|"+address); err != nil {
		h.log.WarnContext(ctx, "remembering the address of a sign-in failed", "error", err.Error())
	}
	h.setCookie(c, sessionCookie, sess.ID, 0)
	// A new CSRF anchor: a form token obtained before sign-in is worthless after it.
	h.setCookie(c, csrfCookie, newAnchor(), 0)
	c.Redirect(http.StatusSeeOther, next)
}

// attempt is one sign-in attempt counted by a limiter.
type attempt struct {
	f   *throttle.Failures
	key string
}

// accountKey is the key sign-in attempts naming login (trimmed) count
// under: the identifier as typed, lowercased, never the account it names.
// Keyed by the account, failures under a username would answer a try under
// an email with 429 exactly when both are one account's; keyed by what is
// typed, the answers tell nothing of accounts (decision 0091). The username
// and the email of one account thus have a budget each.
func accountKey(login string) string {
	return "login:" + strings.ToLower(login)
}

// countAttempt counts a sign-in attempt for account (accountKey) from
// address (ratelimit.AddressKey) before the password is checked,
// atomically, so parallel guesses cannot all pass. It returns what it
// counted (to refund when the attempt succeeds), the wait when a limit
// refuses it (then nothing stays counted), and whether a failure should be
// answered slowly.
func (h *Handler) countAttempt(ctx context.Context, account, address string) (counted []attempt, wait time.Duration, slow bool, err error) {
	for _, a := range []attempt{{h.AccountAddressFailures, address + "|" + account}, {h.AddressFailures, address}} {
		w, remaining, err := a.f.Count(ctx, a.key)
		if err != nil || w > 0 {
			h.refund(ctx, counted)
			return nil, w, false, err
		}
		counted = append(counted, a)
		slow = slow || remaining < a.f.Limit()/2
	}
	// Per account from any address: an address the account signed in from
	// is spared (the two limits above still hold it), every other one
	// shares the account's budget.
	known, err := h.KnownAddresses.Has(ctx, account+"|"+address)
	if err != nil {
		h.refund(ctx, counted)
		return nil, 0, false, err
	}
	if known {
		return counted, 0, slow, nil
	}
	a := attempt{h.AccountFailures, account}
	w, remaining, err := a.f.Count(ctx, a.key)
	if err != nil || w > 0 {
		h.refund(ctx, counted)
		return nil, w, false, err
	}
	counted = append(counted, a)
	return counted, 0, slow || remaining < a.f.Limit()/2, nil
}

// refund gives back the attempts counted for a sign-in that was no wrong guess.
func (h *Handler) refund(ctx context.Context, counted []attempt) {
	for _, a := range counted {
		if err := a.f.Refund(ctx, a.key); err != nil {
			h.log.WarnContext(ctx, "refunding a sign-in attempt failed", "error", err.Error())
		}
	}
}

// loginFailed answers a wrong guess, slowly when slow.
func (h *Handler) loginFailed(c *gin.Context, next, username string, slow bool) {
	ctx := c.Request.Context()
	if slow && h.failureDelay > 0 {
		t := time.NewTimer(h.failureDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	h.renderLogin(c, http.StatusBadRequest, next, "", username, badCredentials)
}

// logout asks a signed-in browser to confirm: a GET (a link, or an <img> on
// another site) never ends a session. Without a session there is nothing to
// end, and the browser goes where a finished sign-out goes.
func (h *Handler) logout(c *gin.Context) {
	next := c.Query("next")
	clientID, ok := h.logoutClient(c, c.Query("client_id"))
	if !ok {
		return
	}
	rp, ok := h.endSession(c, clientID, c.Query("id_token_hint"), c.Query("post_logout_redirect_uri"), c.Query("state"))
	if !ok {
		return
	}
	if rp.client != "" {
		clientID = rp.client
	}
	sess, err := h.currentSession(c)
	if err != nil {
		h.log.WarnContext(c.Request.Context(), "reading session failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	if sess == nil {
		h.signedOut(c, next, clientID, rp)
		return
	}
	h.render(c, http.StatusOK, h.pages.logout, map[string]any{"Title": "Sign out", "CSRF": h.csrfToken(c), "Next": next, "ClientID": clientID,
		"PostLogout": rp.redirect, "State": rp.state})
}

// rpLogout is an OpenID Connect RP-initiated logout request (RP-Initiated
// Logout 1.0 §2): where to send the browser when signed out, with state.
type rpLogout struct {
	client, redirect, state string
}

// endSession validates the RP-initiated logout parameters: an
// id_token_hint must be an ID token of this server (expired or not) and
// names the client when client_id does not (they must agree); a
// post_logout_redirect_uri must be registered for that client, exactly.
// Anything else is the invalid request page, and nothing changes.
func (h *Handler) endSession(c *gin.Context, clientID, hint, redirect, state string) (rpLogout, bool) {
	rp := rpLogout{client: clientID, state: state}
	if hint != "" {
		claims, err := h.IDTokens.ReadHint(hint)
		if err != nil {
			h.invalidRequest(c, "The id_token_hint is not an ID token of this server.")
			return rp, false
		}
		if rp.client != "" && rp.client != claims.Audience {
			h.invalidRequest(c, "The id_token_hint was issued to another app than client_id.")
			return rp, false
		}
		rp.client = claims.Audience
	}
	if len(state) > maxNonce {
		h.invalidRequest(c, "The state is longer than 512 characters.")
		return rp, false
	}
	if redirect == "" {
		return rp, true
	}
	id, ok := client.ParseID(rp.client)
	if !ok {
		h.invalidRequest(c, "A post_logout_redirect_uri needs client_id or id_token_hint.")
		return rp, false
	}
	cl, err := h.Clients.Lookup(c.Request.Context(), id)
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		h.unavailable(c)
		return rp, false
	}
	if err != nil || !cl.HasPostLogoutRedirectURI(redirect) {
		h.invalidRequest(c, "The post_logout_redirect_uri is not one registered for this app.")
		return rp, false
	}
	rp.redirect = redirect
	return rp, true
}

// logoutConfirmed ends the session: the confirmation form, with its CSRF token.
func (h *Handler) logoutConfirmed(c *gin.Context) {
	if !h.csrfValid(c) {
		h.csrfFailed(c)
		return
	}
	// The form carries what the GET validated; it is checked again.
	rp, ok := h.endSession(c, c.PostForm("client_id"), "", c.PostForm("post_logout_redirect_uri"), c.PostForm("state"))
	if !ok {
		return
	}
	if id, err := h.cookie(c, sessionCookie); err == nil && id != "" {
		if err := h.Sessions.Delete(c.Request.Context(), id); err != nil {
			h.log.WarnContext(c.Request.Context(), "deleting session failed", "error", err.Error())
			h.unavailable(c)
			return
		}
	}
	h.signedOut(c, c.PostForm("next"), c.PostForm("client_id"), rp)
}

// signedOut clears the session cookie and sends the browser to the
// RP-initiated logout's post_logout_redirect_uri (with its state), or to
// next when it is a registered redirect URI of the client, else shows the
// signed-out page.
func (h *Handler) signedOut(c *gin.Context, next, clientID string, rp rpLogout) {
	h.setCookie(c, sessionCookie, "", -1)
	if rp.redirect != "" {
		u, _ := url.Parse(rp.redirect)
		if rp.state != "" {
			q := u.Query()
			q.Set("state", rp.state)
			u.RawQuery = q.Encode()
		}
		status := http.StatusFound
		if c.Request.Method == http.MethodPost {
			status = http.StatusSeeOther
		}
		c.Header("Cache-Control", "no-store")
		c.Redirect(status, u.String())
		return
	}
	if id, ok := client.ParseID(clientID); ok && next != "" {
		if cl, err := h.Clients.Lookup(c.Request.Context(), id); err == nil && cl.HasRedirectURI(next) {
			status := http.StatusFound
			if c.Request.Method == http.MethodPost {
				status = http.StatusSeeOther
			}
			c.Header("Cache-Control", "no-store")
			c.Redirect(status, next)
			return
		}
	}
	h.message(c, http.StatusOK, "Signed out", "You are signed out", "", "You can close this page.")
}

type appView struct {
	ID                        int64
	Name, Description, Scopes string
}

func (h *Handler) apps(c *gin.Context) {
	sess, err := h.currentSession(c)
	if err != nil {
		h.unavailable(c)
		return
	}
	if sess == nil {
		c.Redirect(http.StatusFound, "/oauth/login?next="+url.QueryEscape("/oauth/apps"))
		return
	}
	list, err := h.Consents.ListForUser(c.Request.Context(), sess.UserID)
	if err != nil {
		h.log.WarnContext(c.Request.Context(), "listing consents failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	views := make([]appView, 0, len(list))
	for _, a := range list {
		var descs []string
		for _, n := range a.Scopes {
			if s, ok := scope.Lookup(n); ok {
				descs = append(descs, strings.ToLower(s.Description[:1])+s.Description[1:])
			}
		}
		views = append(views, appView{ID: a.ClientID, Name: a.ClientName, Description: a.ClientDescription, Scopes: strings.Join(descs, "; ")})
	}
	h.render(c, http.StatusOK, h.pages.apps, map[string]any{"Title": "Authorized apps", "Apps": views, "CSRF": h.csrfToken(c)})
}

// revokeApp deletes the consent and every refresh token of the user and app.
func (h *Handler) revokeApp(c *gin.Context) {
	if !h.csrfValid(c) {
		h.csrfFailed(c)
		return
	}
	sess, err := h.currentSession(c)
	if err != nil {
		h.unavailable(c)
		return
	}
	if sess == nil {
		c.Redirect(http.StatusSeeOther, "/oauth/login?next="+url.QueryEscape("/oauth/apps"))
		return
	}
	id, ok := client.ParseID(c.PostForm("client_id"))
	if !ok {
		h.message(c, http.StatusBadRequest, "Invalid request", "Invalid request", "No app was named.")
		return
	}
	ctx := c.Request.Context()
	if err := h.Consents.Delete(ctx, sess.UserID, id); err != nil {
		h.log.WarnContext(ctx, "deleting consent failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	if err := h.Refresh.RevokeUserClient(ctx, sess.UserID, id); err != nil {
		h.log.WarnContext(ctx, "revoking tokens failed", "error", err.Error())
		h.unavailable(c)
		return
	}
	c.Redirect(http.StatusSeeOther, "/oauth/apps")
}
