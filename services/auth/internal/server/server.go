// Package server wires the auth service for `auth serve`: stores, business, handlers, background key rotation and webhook delivery, on the shared two-listener server.
package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/service"
	"github.com/eventreg/eventreg/libs/usersclient"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/authmetrics"
	"github.com/eventreg/eventreg/services/auth/internal/authorize"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/clientsecret"
	"github.com/eventreg/eventreg/services/auth/internal/config"
	"github.com/eventreg/eventreg/services/auth/internal/consent/consentdb"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/grant/codedb"
	"github.com/eventreg/eventreg/services/auth/internal/grant/refreshdb"
	"github.com/eventreg/eventreg/services/auth/internal/grantapi"
	"github.com/eventreg/eventreg/services/auth/internal/idtoken"
	"github.com/eventreg/eventreg/services/auth/internal/logout"
	"github.com/eventreg/eventreg/services/auth/internal/pagesapi"
	"github.com/eventreg/eventreg/services/auth/internal/session"
	"github.com/eventreg/eventreg/services/auth/internal/signin"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/signing/keydb"
	"github.com/eventreg/eventreg/services/auth/internal/throttle"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
	"github.com/eventreg/eventreg/services/auth/internal/webhook/webhookdb"
	"github.com/eventreg/eventreg/services/auth/internal/webhookapi"
)

// App is the wired service: its handlers on the two engines, and the key
// manager and the webhook dispatcher whose loops must run while it serves.
type App struct {
	Keys     *signing.Manager
	Clients  *client.Service
	Webhooks *webhook.Service
	// Dispatcher delivers webhooks; nil when WEBHOOK_DELIVERY is false.
	Dispatcher *webhook.Dispatcher
	// Redis is the client Mount opened (nil after Build alone).
	Redis redis.UniversalClient
	// Refresh keeps the refresh-token families.
	Refresh *refreshdb.Store
}

// Users is what auth needs of the users service (usersclient.Client).
type Users interface {
	signin.Users
	authorize.Users
}

// Build wires everything onto public and internal. users is the users
// service (usersclient.Client in production, a test double in tests); metrics
// receives the business counters (nil: not counted).
func Build(ctx context.Context, cfg config.Serve, log *slog.Logger, pool *pgxpool.Pool, rdb redis.UniversalClient, users Users, metrics *authmetrics.Metrics, public, internal gin.IRouter) (*App, error) {
	keys := signing.NewManager(keydb.New(pool), cfg.KEK(), signing.Config{
		RotationPeriod: cfg.KeyRotationPeriod, ActivationDelay: cfg.KeyActivationDelay,
		RefreshInterval: cfg.KeyRefreshInterval, MaxTokenTTL: cfg.AccessTokenTTL,
	}, log)
	if err := keys.Ensure(ctx); err != nil {
		log.Warn("creating the first signing key failed; retrying in the background", "error", err.Error())
	} else if err := keys.Reload(ctx); err != nil {
		log.Warn("loading signing keys failed; retrying in the background", "error", err.Error())
	}
	clients := client.NewService(clientdb.New(pool), clientsecret.NewHasher([]byte(cfg.ClientSecretKey)), cfg.ClientCacheTTL)
	issuer := strings.TrimRight(cfg.Issuer, "/")
	tokens := accesstoken.NewIssuer(keys, issuer, cfg.TokenAudience, cfg.AccessTokenTTL)
	denylist := refreshdb.NewDenylist(rdb, cfg.AccessTokenTTL)
	metrics.WatchRevocationFeed(denylist.Size)
	clients.SetTokenRevoker(refreshdb.ClientTokens{Denylist: denylist, Grace: cfg.ClientCacheTTL + time.Second})
	refresh := refreshdb.New(rdb, denylist, refreshdb.Lifetimes{Idle: cfg.RefreshIdleTTL, Absolute: cfg.RefreshAbsoluteTTL})
	codes := codedb.New(rdb, cfg.AuthCodeTTL)
	sessions := session.New(rdb, cfg.SessionIdleTTL, cfg.SessionAbsTTL)

	grants := &grant.Service{
		Clients: clients, Tokens: tokens, IDTokens: idtoken.NewIssuer(keys, issuer, cfg.AccessTokenTTL), Codes: codes, Refresh: refresh, Denylist: denylist, Sessions: sessions, Users: users,
		ClientFailures: throttle.NewFailures(rdb, "client", cfg.ClientAuthFailures, cfg.ClientFailureWindow),
		TokenRequests:  throttle.NewFailures(rdb, "token", cfg.ClientTokenRequests, cfg.ClientRateWindow),
		Revocations:    throttle.NewFailures(rdb, "revoke", cfg.ClientRevocations, cfg.ClientRateWindow),
		Issuer:         issuer, Log: log, Metrics: metrics,
	}
	grantapi.New(grants).Register(public, internal)

	// Two derivation steps give the CSRF key the bytes the previous release
	// derives, so forms rendered by one of its replicas still validate
	// during a rolling deploy.
	csrfKey := deriveKey(deriveKey([]byte(cfg.ClientSecretKey), "csrf"), "eventreg auth csrf key v1")
	pages, err := pagesapi.New(pagesapi.Config{
		OrgName: cfg.OrgName, OrgLogoURL: cfg.OrgLogoURL, SecureCookies: strings.HasPrefix(issuer, "https://"), CSRFKey: csrfKey,
	}, pagesapi.Rules{
		SignIn: &signin.Service{
			Users: users, Sessions: sessions,
			AccountAddressFailures: throttle.NewFailures(rdb, "login-account-address", cfg.LoginFailuresPerAccount, cfg.LoginFailureWindow),
			AddressFailures:        throttle.NewFailures(rdb, "login-address", cfg.LoginFailuresPerAddress, cfg.LoginFailureWindow),
			AccountFailures:        throttle.NewFailures(rdb, "login-account", cfg.LoginFailuresPerAccount, cfg.LoginFailureWindow),
			KnownAddresses:         throttle.NewKnown(rdb, "login-account-address", cfg.LoginKnownAddressTTL),
			FailureDelay:           cfg.LoginFailureDelay, Log: log, Metrics: metrics,
		},
		Authorize: &authorize.Service{
			Clients: clients, Consents: consentdb.New(pool), Users: users, Sessions: sessions, Codes: codes, Families: refresh,
			IDTokens: grants.IDTokens, Issuer: issuer, Metrics: metrics,
		},
		Logout: &logout.Service{Clients: clients, AccessTokens: tokens, IDTokens: grants.IDTokens, Sessions: sessions},
	}, log)
	if err != nil {
		return nil, err
	}
	pages.Register(public)

	public.GET(grantapi.PathJWKS, jwks(keys))
	internal.GET(grantapi.PathJWKS, jwks(keys))
	public.GET(webhookapi.PathKey, webhookKey(keys))
	app := &App{Keys: keys, Clients: clients, Refresh: refresh}
	signOut := func(ctx context.Context, userID int64) error { _, err := grants.SignOut(ctx, userID); return err }
	if err := buildWebhooks(app, cfg, log, pool, tokens, denylist, signOut, metrics, public, internal); err != nil {
		return nil, err
	}
	return app, nil
}

// deriveKey derives the key of one purpose from secret (CLIENT_SECRET_KEY),
// so every replica derives the same one.
func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// buildWebhooks wires the webhook API onto public and internal (its event
// intake signing users out as events ask, signOut), and the dispatcher when
// this replica delivers.
func buildWebhooks(app *App, cfg config.Serve, log *slog.Logger, pool *pgxpool.Pool, tokens *accesstoken.Issuer,
	denylist *refreshdb.Denylist, signOut func(context.Context, int64) error, metrics *authmetrics.Metrics, public, internal gin.IRouter) error {
	networks, err := cfg.Webhooks.Networks()
	if err != nil {
		return err
	}
	policy := webhook.NewPolicy(networks)
	store := webhookdb.New(pool)
	wm := webhook.NewMetrics(metrics.Registerer())
	app.Webhooks = webhook.NewService(store, app.Clients, policy, wm)
	codec, err := cursor.NewCodec(deriveKey([]byte(cfg.ClientSecretKey), "webhook-cursor"))
	if err != nil {
		return err
	}
	intake := webhookapi.New(app.Webhooks, tokens, denylist, codec, log)
	intake.SignOut = signOut
	intake.Register(public, internal)
	if cfg.Webhooks.Delivery {
		w := cfg.Webhooks
		app.Dispatcher = webhook.NewDispatcher(store, app.Keys, webhook.DispatcherConfig{
			Workers: w.Workers, EndpointConcurrency: w.EndpointConcurrency, AppConcurrency: w.AppLimit(), Timeout: w.Timeout, Lease: w.Lease,
			PollInterval: w.PollInterval, RetryBase: w.RetryBase, RetryMax: w.RetryMax, RetryFor: w.RetryFor,
			DisableAfter: w.DisableAfter, Retention: w.Retention, DeadRetention: w.DeadRetention,
			Issuer: strings.TrimRight(cfg.Issuer, "/"), Policy: policy, Log: log, Metrics: wm,
		})
	}
	return nil
}

// StartDispatcher runs the webhook dispatcher (when there is one) until
// ctx ends; the returned function waits for it to finish.
func (a *App) StartDispatcher(ctx context.Context) (wait func(context.Context) error) {
	done := make(chan struct{})
	if a.Dispatcher == nil {
		close(done)
	} else {
		go func() { defer close(done); a.Dispatcher.Run(ctx) }()
	}
	return func(stop context.Context) error {
		select {
		case <-done:
			return nil
		case <-stop.Done():
			return stop.Err()
		}
	}
}

// jwks serves the published keys. Until this replica has loaded them it
// answers 503, never an empty set that a validator could take for the keys.
func jwks(keys *signing.Manager) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := keys.Ready(c.Request.Context()); err != nil {
			c.Header("Cache-Control", "no-store")
			apireply.Abort(c, apierror.Unavailable("The key set"))
			return
		}
		c.Header("Cache-Control", "public, max-age=60")
		c.Data(http.StatusOK, "application/json", keys.JWKS())
	}
}

// webhookKey serves the public key that signs webhook tokens now as PEM,
// where the real API serves its webhook key (decision 0098).
func webhookKey(keys *signing.Manager) gin.HandlerFunc {
	return func(c *gin.Context) {
		pemKey := keys.WebhookKeyPEM()
		if pemKey == nil {
			c.Header("Cache-Control", "no-store")
			apireply.Abort(c, apierror.Unavailable("The webhook key"))
			return
		}
		c.Header("Cache-Control", "public, max-age=60")
		c.Data(http.StatusOK, "text/plain; charset=utf-8", pemKey) // a PEM is text; every client reads it
	}
}

// upgradeOldFamilies gives the refresh-token families stored before they had
// lifetimes their lifetimes, reuse detection and their place in the indexes
// (refreshdb.Store.MigrateOld), once per start, in the background: it is
// idempotent and every replica may run it at once.
func upgradeOldFamilies(ctx context.Context, refresh *refreshdb.Store, log *slog.Logger) {
	n, err := refresh.MigrateOld(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("upgrading refresh token families from before their lifetimes failed; the next start tries again", "error", err.Error())
		}
		return
	}
	if n > 0 {
		log.Info("upgraded refresh token families from before their lifetimes", "families", n)
	}
}

// Mount wires auth onto rt as `serve` runs it: Redis, the users service's
// client, every handler (Build), the readiness checks and the background
// loops (key rotation, webhook delivery), which run until ctx ends. Run and
// the test harness (authtest) both call it.
func Mount(ctx context.Context, cfg config.Serve, rt *service.Runtime) (*App, error) {
	rdb, err := redisdb.Open(cfg.RedisURL, cfg.RedisCluster)
	if err != nil {
		return nil, err
	}
	rt.OnClose(func(context.Context) error { return rdb.Close() })
	// Not a readiness check: a Redis outage is answered per request (503 on the
	// grants that need it), never by taking every replica out of the Service.
	rt.Server.Metrics.MustRegister(redisdb.NewPoolCollector(rdb))
	users := usersclient.NewClient(cfg.UsersInternalURL, cfg.UsersTimeout, rt.Credentials)
	app, err := Build(ctx, cfg, rt.Log, rt.Pool, rdb, users, authmetrics.New(rt.Server.Metrics), rt.Server.Public, rt.Server.Internal)
	if err != nil {
		return nil, fmt.Errorf("wiring auth: %w", err)
	}
	app.Redis = rdb
	// Out of the server's REQUEST_TIMEOUT: the event intake, which the
	// producers' relays give PublishTimeout (10 s) for a batch of up to 500
	// events (cut at 3 s, a large batch would fail and be sent again, for
	// ever), and the sign-in form's POST (pagesapi.PathLogin says why).
	rt.Server.ExemptFromRequestTimeout(authapi.PathEvents, pagesapi.PathLogin)
	LogClientAddresses(rt.Log, cfg.TrustedProxies, cfg.LoginFailuresPerAddress)
	rt.Server.AddReadinessCheck("signing-keys", app.Keys.Ready)
	go app.Keys.Run(ctx)
	go upgradeOldFamilies(ctx, app.Refresh, rt.Log)
	// Deliveries in flight finish (or keep their lease) before the pool closes.
	rt.OnClose(app.StartDispatcher(ctx))
	return app, nil
}

// LogClientAddresses says at start-up where sign-in throttling takes client
// addresses from. The per-address limit is only as good as those addresses:
// where the proxy in front does not keep them (a load balancer that hides
// the client from the ingress controller, or no TRUSTED_PROXIES behind a
// proxy), every sign-in seems to come from one address, and
// LOGIN_FAILURES_PER_ADDRESS failures from anyone pause sign-in for everyone.
func LogClientAddresses(log *slog.Logger, trusted []string, perAddress int) {
	named := false
	for _, p := range trusted {
		named = named || strings.TrimSpace(p) != ""
	}
	if !named {
		log.Warn("TRUSTED_PROXIES is empty: a sign-in's client address is its peer's. Behind a proxy that is the proxy's for every client, "+
			"and the per-address sign-in limit (LOGIN_FAILURES_PER_ADDRESS) pauses sign-in for everyone at once",
			"login_failures_per_address", perAddress)
		return
	}
	log.Info("sign-in limits count per client address as X-Forwarded-For from TRUSTED_PROXIES names it; "+
		"if the proxy in front does not keep client addresses, the per-address limit (LOGIN_FAILURES_PER_ADDRESS) pauses sign-in for everyone at once "+
		"(check that client_ip in the request log is the client's)",
		"trusted_proxies", strings.Join(trusted, ","), "login_failures_per_address", perAddress)
}
