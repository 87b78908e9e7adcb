package suite

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/bench/internal/dataset"
	"github.com/eventreg/eventreg/bench/internal/load"
	"github.com/eventreg/eventreg/bench/internal/oauthflow"
	"github.com/eventreg/eventreg/bench/internal/report"
	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/cursor"
)

// scenario is one kind of request the suite measures.
type scenario struct {
	name, request string
	// warm: an unmeasured run first is harmless (the scenario uses no
	// single-use state such as codes).
	warm bool
	// unavailable says why the scenario cannot run (set during preparation).
	unavailable string
	// load builds the load of one run at concurrency c.
	load func(ctx context.Context, c int) (load.Spec, error)
}

// environment is what the scenarios share: tokens, the demo app's browser,
// the data set's ranges and the deep-page cursors.
type environment struct {
	o                     Options
	base                  string
	usersURL              string // the users service's public listener, without the gateway
	serviceToken          string // the demo integration's, for the setup
	clients               *clients
	browser               *oauthflow.Browser
	app                   oauthflow.App
	usersFrom, usersCount int64
	deep                  map[string]string // deep-page cursors by scenario name
	firstBodies           map[string]string // first-page bodies by scenario name
	unavailable           map[string]string // scenario name → why it cannot run
	notes                 []string
	store                 *dataset.Store
	serviceAuth, oboAuth  string // HTTP Basic client authentication
	httpClient            *http.Client
}

func basic(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
}

// prepare gets tokens and finds the deep pages, before anything is measured.
func prepare(ctx context.Context, s *stack.Stack, o Options, cursorKey string, counts dataset.Counts) (*environment, error) {
	env := &environment{o: o, base: s.GatewayURL, usersURL: s.Services["users"].PublicURL, deep: map[string]string{}, firstBodies: map[string]string{}, unavailable: map[string]string{},
		usersFrom: dataset.GeneratedUsersFrom, usersCount: counts.Users,
		serviceAuth: basic(serviceClientID, serviceClientSecret), oboAuth: basic(oboClientID, oboClientSecret),
		httpClient: &http.Client{Timeout: 30 * time.Second}}
	var err error
	env.serviceToken, err = oauthflow.ServiceToken(ctx, env.base, serviceClientID, serviceClientSecret, "user:read", "volunteer:read", "registration:read")
	if err != nil {
		return nil, err
	}
	env.app = oauthflow.App{Base: env.base, ClientID: oboClientID, ClientSecret: oboClientSecret, RedirectURI: oboRedirectURI,
		Scopes: []string{"pii:basic"}, Verifier: oauth2.GenerateVerifier()}
	env.browser = oauthflow.NewBrowser(env.base, demoUser, demoPassword)
	// Logs in and consents once; later codes come without a page. This
	// first code is not needed.
	if _, err := env.browser.Code(ctx, env.app); err != nil {
		return nil, fmt.Errorf("authorization-code flow for %s: %w", demoUser, err)
	}
	if env.clients, err = registerClients(ctx, s, o.StateDir, cursorKey, env.browser); err != nil {
		return nil, err
	}

	if env.store, err = dataset.Open(ctx, s); err != nil {
		return nil, err
	}
	codec, err := cursor.NewCodec([]byte(cursorKey))
	if err != nil {
		return nil, fmt.Errorf("cursor codec: %w", err)
	}
	env.findDeepPages(ctx, codec, counts)
	return env, nil
}

func (env *environment) close(ctx context.Context) {
	if env.store != nil {
		env.store.Close(ctx)
	}
}

// stateless returns a load sending r again and again (wrk sends it).
func stateless(r load.Request) func(context.Context, int) (load.Spec, error) {
	return func(context.Context, int) (load.Spec, error) {
		return load.Spec{Request: &r}, nil
	}
}

// tokenRequest is a token request with the client authentication auth.
func (env *environment) tokenRequest(auth string, form url.Values) load.Request {
	return load.Request{Base: env.base, Method: http.MethodPost, Path: "/api/oauth/token", Body: []byte(form.Encode()),
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Authorizations: []string{auth}}
}

// reads spreads method path body (JSON when not empty) over the benchmark's
// apps' tokens, taken in turn.
func (env *environment) reads(method, path, body string, tokens []string) func(context.Context, int) (load.Spec, error) {
	r := load.Request{Base: env.base, Method: method, Path: path, Authorizations: bearer(tokens)}
	if body != "" {
		r.Header, r.Body = http.Header{"Content-Type": {"application/json"}}, []byte(body)
	}
	return stateless(r)
}

func bearer(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i] = "Bearer " + tok
	}
	return out
}

// scenarios lists the scenarios of the issue in the order they run.
func (env *environment) scenarios() []scenario {
	withC := func(f func(context.Context, int) (load.Spec, error)) func(context.Context, int) (load.Spec, error) {
		return func(ctx context.Context, c int) (load.Spec, error) {
			s, err := f(ctx, c)
			s.Concurrency = c
			return s, err
		}
	}
	list := []scenario{
		{name: report.ClientCredentials, request: "POST /api/oauth/token grant_type=client_credentials", warm: true,
			load: withC(stateless(env.tokenRequest(env.serviceAuth, url.Values{"grant_type": {"client_credentials"}, "scope": {"user:read"}})))},
		{name: report.AuthorizationCode, request: "POST /api/oauth/token grant_type=authorization_code", load: withC(env.codeExchange)},
		{name: report.RefreshRotation, request: "POST /api/oauth/token grant_type=refresh_token", load: withC(env.refreshRotation)},
		{name: report.UserByID, request: "GET /api/v0/users/:id", warm: true, load: withC(env.userByID(env.base))},
		// The same read sent straight to the users service: what the gateway
		// hop costs, for reading users-get against pgbench (no target).
		{name: report.UserByIDDirect, request: "GET /api/v0/users/:id (straight to the users service, no gateway)", warm: true,
			load: withC(env.userByID(env.usersURL))},
		{name: report.CurrentUser, request: "GET /api/users/current", warm: true,
			load: withC(env.reads(http.MethodGet, "/api/users/current", "", env.clients.oboTokens))},
		{name: report.UsersSearchFirst, request: "POST /api/v0/users/search (first page)", warm: true},
		{name: report.UsersSearchDeep, request: "POST /api/v0/users/search (depth 90%)", warm: true},
		{name: report.UsersRoleFirst, request: "POST /api/v0/users/search roleId (first page)", warm: true},
		{name: report.UsersRoleDeep, request: "POST /api/v0/users/search roleId (last page)", warm: true},
		{name: report.RegistrationsFirst, request: "POST /api/v0/registration/search (first page)", warm: true},
		{name: report.RegistrationsDeep, request: "POST /api/v0/registration/search (last page)", warm: true},
		{name: report.DepartmentsList, request: "GET /api/v0/volunteers/departments", warm: true,
			load: withC(env.reads(http.MethodGet, "/api/v0/volunteers/departments", "", env.clients.serviceTokens))},
	}
	paths := map[string]string{report.UsersSearchFirst: "/api/v0/users/search", report.UsersSearchDeep: "/api/v0/users/search",
		report.UsersRoleFirst: "/api/v0/users/search", report.UsersRoleDeep: "/api/v0/users/search",
		report.RegistrationsFirst: "/api/v0/registration/search", report.RegistrationsDeep: "/api/v0/registration/search"}
	for i := range list {
		sc := &list[i]
		if why, ok := env.unavailable[sc.name]; ok {
			sc.unavailable = why
			continue
		}
		if path, ok := paths[sc.name]; ok {
			body := env.firstBodies[sc.name]
			if deep, ok := env.deep[sc.name]; ok {
				body = deep
			}
			sc.load = withC(env.reads(http.MethodPost, path, body, env.clients.serviceTokens))
		}
	}
	return list
}

// userByID reads random generated users at base (the gateway, or the users
// service's own public listener).
func (env *environment) userByID(base string) func(context.Context, int) (load.Spec, error) {
	return func(context.Context, int) (load.Spec, error) {
		if env.usersCount == 0 {
			return load.Spec{}, errors.New("no generated users")
		}
		return load.Spec{Request: &load.Request{Base: base, Method: http.MethodGet, PathPrefix: "/api/v0/users/",
			IDs: load.IDRange{From: env.usersFrom, Count: env.usersCount}, Authorizations: bearer(env.clients.serviceTokens)}}, nil
	}
}

// codeExchange trades a pool of codes made beforehand (through the login and
// consent pages) for tokens; the run ends early if the pool runs out.
func (env *environment) codeExchange(ctx context.Context, c int) (load.Spec, error) {
	budget := env.o.Duration * 3 / 2
	codes, err := env.browser.Codes(ctx, env.app, 200_000, 32, budget)
	if err != nil {
		return load.Spec{}, fmt.Errorf("making codes: %w", err)
	}
	fmt.Fprintf(env.o.Progress, "    %d authorization codes made for concurrency %d\n", len(codes), c)
	var next atomic.Int64
	h := http.Header{"Authorization": {env.oboAuth}, "Content-Type": {"application/x-www-form-urlencoded"}}
	tr := func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		if i >= int64(len(codes)) {
			return vegeta.ErrNoTargets
		}
		form := url.Values{"grant_type": {"authorization_code"}, "code": {codes[i]}, "redirect_uri": {oboRedirectURI}, "code_verifier": {env.app.Verifier}}
		t.Method, t.URL, t.Header, t.Body = http.MethodPost, env.base+"/api/oauth/token", h, []byte(form.Encode())
		return nil
	}
	return load.Spec{Targeter: tr}, nil
}

// refreshRotation keeps 4c refresh-token families rotating: each answer's new
// refresh token goes back into the pool for a later request.
func (env *environment) refreshRotation(ctx context.Context, c int) (load.Spec, error) {
	chains := max(4*c, 64)
	codes, err := env.browser.Codes(ctx, env.app, chains, 16, time.Minute)
	if err != nil {
		return load.Spec{}, fmt.Errorf("making codes: %w", err)
	}
	pool := make(chan string, chains)
	for _, code := range codes {
		tok, err := env.app.Exchange(ctx, code)
		if err != nil {
			return load.Spec{}, err
		}
		if tok.RefreshToken == "" {
			return load.Spec{}, errors.New("the code exchange gave no refresh token")
		}
		pool <- tok.RefreshToken
	}
	h := http.Header{"Authorization": {env.oboAuth}, "Content-Type": {"application/x-www-form-urlencoded"}}
	tr := func(t *vegeta.Target) error {
		select {
		case rt := <-pool:
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "redirect_uri": {oboRedirectURI}}
			t.Method, t.URL, t.Header, t.Body = http.MethodPost, env.base+"/api/oauth/token", h, []byte(form.Encode())
			return nil
		case <-time.After(5 * time.Second):
			return vegeta.ErrNoTargets // every family broke: the errors say why
		}
	}
	onResult := func(r *vegeta.Result) {
		if r.Code != http.StatusOK {
			return
		}
		var resp struct {
			RefreshToken string `json:"refresh_token"`
		}
		if json.Unmarshal(r.Body, &resp) == nil && resp.RefreshToken != "" {
			select {
			case pool <- resp.RefreshToken:
			default:
			}
		}
	}
	return load.Spec{Targeter: tr, OnResult: onResult, KeepBody: true}, nil
}
