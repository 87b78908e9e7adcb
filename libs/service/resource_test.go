package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/tokenauth"
	"github.com/eventreg/eventreg/libs/tokentest"
)

func resourceEnv(extra ...string) map[string]string {
	env := map[string]string{"AUTH_ISSUER": "https://issuer.test", "AUTH_JWKS_URL": "http://auth:9090/.well-known/jwks.json",
		"CURSOR_KEY": strings.Repeat("c", 32), "CONVENTION_ID": "2026"}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

func TestResourceRevocationSettings(t *testing.T) {
	t.Run("defaults: the feed on AUTH_JWKS_URL's host, polled every 2s; keys re-read every 5m", func(t *testing.T) {
		r, err := config.LoadFrom[Resource](resourceEnv())
		if err != nil {
			t.Fatal(err)
		}
		feed, _ := r.revocationsURL()
		if feed != "http://auth:9090/internal/revocations" || r.RevocationPoll != 2*time.Second || r.JWKSRefresh != 5*time.Minute {
			t.Fatalf("feed %q, poll %v, JWKS refresh %v", feed, r.RevocationPoll, r.JWKSRefresh)
		}
	})
	t.Run("each can be set", func(t *testing.T) {
		r, err := config.LoadFrom[Resource](resourceEnv("AUTH_REVOCATIONS_URL", "https://auth-internal:9443/internal/revocations",
			"REVOCATION_POLL_INTERVAL", "500ms", "JWKS_REFRESH_INTERVAL", "1m"))
		if err != nil {
			t.Fatal(err)
		}
		feed, _ := r.revocationsURL()
		if feed != "https://auth-internal:9443/internal/revocations" || r.RevocationPoll != 500*time.Millisecond || r.JWKSRefresh != time.Minute {
			t.Fatalf("feed %q, poll %v, JWKS refresh %v", feed, r.RevocationPoll, r.JWKSRefresh)
		}
	})
	for name, env := range map[string][]string{
		"REVOCATION_POLL_INTERVAL": {"REVOCATION_POLL_INTERVAL", "50ms"},
		"JWKS_REFRESH_INTERVAL":    {"JWKS_REFRESH_INTERVAL", "0s"},
		"AUTH_REVOCATIONS_URL":     {"AUTH_REVOCATIONS_URL", "auth:9090/internal/revocations"},
		"AUTH_JWKS_URL":            {"AUTH_JWKS_URL", "/.well-known/jwks.json"},
	} {
		t.Run("a bad "+name+" is named", func(t *testing.T) {
			if _, err := config.LoadFrom[Resource](resourceEnv(env...)); err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("%v", err)
			}
		})
	}
}

func TestStartResourcePollsTheRevocationFeed(t *testing.T) {
	ts := tokentest.New(t)
	tok := ts.Service(t, "user:read")
	parsed, err := jwt.ParseInsecure([]byte(tok))
	if err != nil {
		t.Fatal(err)
	}
	var revoked atomic.Bool
	// The feed is auth's internal listener: it answers only a service token for auth.
	key := servicetoken.Config{Key: strings.Repeat("i", servicetoken.MinKeyLength)}
	auth := servicetoken.NewVerifier(key, "auth")
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		} else if _, err := auth.Verify(tok); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if !revoked.Load() {
			_, _ = w.Write([]byte(`{"next":0,"revoked":[]}`))
			return
		}
		fmt.Fprintf(w, `{"next":1,"revoked":[{"jti":%q,"exp":%d}]}`, parsed.JwtID(), parsed.Expiration().Unix())
	}))
	t.Cleanup(feed.Close)
	log := slog.New(slog.DiscardHandler)
	rt := &Runtime{Name: "test", Log: log, Server: httpserver.New(httpserver.Config{}, log, "test"), Credentials: servicetoken.NewSigner(key, "test")}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	deps, err := StartResource(ctx, rt, Resource{AuthIssuer: tokentest.Issuer, AuthJWKSURL: ts.JWKSURL, TokenAudience: tokentest.Audience,
		TokenLeeway: time.Second, JWKSRefresh: time.Minute, AuthRevocationsURL: feed.URL, RevocationPoll: 10 * time.Millisecond,
		CursorKey: strings.Repeat("c", 32), ConventionID: "2026"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deps.Tokens.Validate(ctx, tok); err != nil {
		t.Fatal(err)
	}
	revoked.Store(true)
	err = testkit.Poll(ctx, 5*time.Second, func(ctx context.Context) error {
		if _, err := deps.Tokens.Validate(ctx, tok); !errors.Is(err, tokenauth.ErrRevoked) {
			return fmt.Errorf("a revoked token: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
