package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/signing/keydb"
)

func TestKeyRotationUnderTraffic(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: map[string]string{
		"KEY_ROTATION_PERIOD": "1s", "KEY_ACTIVATION_DELAY": "400ms", "KEY_REFRESH_INTERVAL": "100ms",
		"CLIENT_TOKEN_REQUESTS": noLimits["CLIENT_TOKEN_REQUESTS"]}})
	v, err := tokenauth.New(tokenauth.Config{JWKSURL: s.InternalURL + "/.well-known/jwks.json", Issuer: s.URL, Audience: "eventreg-api", MinRefresh: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tokens []string
	kids := map[string]int{}
	var failures []string
	deadline := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := len(kids) >= 4 || time.Now().After(deadline) || len(failures) > 0
				mu.Unlock()
				if done {
					return
				}
				st, _, body := postUnchecked(t, s.URL+"/api/oauth/token", form, "grant_type=client_credentials&scope=user:read", authtest.ServiceID, authtest.ServiceSecret)
				mu.Lock()
				if st != http.StatusOK {
					failures = append(failures, "issue: "+string(body))
					mu.Unlock()
					return
				}
				mu.Unlock()
				tok := decode(t, body)["access_token"].(string)
				if _, err := v.Validate(bg(), tok); err != nil {
					mu.Lock()
					failures = append(failures, "validate: "+err.Error())
					mu.Unlock()
					return
				}
				msg, _ := jws.ParseString(tok)
				mu.Lock()
				tokens = append(tokens, tok)
				kids[msg.Signatures()[0].ProtectedHeaders().KeyID()]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	if len(kids) < 4 {
		t.Fatalf("only %d keys signed in 20s: %v", len(kids), kids)
	}
	t.Run("tokens signed before, during and after the rotations all still validate", func(t *testing.T) {
		fresh, _ := tokenauth.New(tokenauth.Config{JWKSURL: s.URL + "/.well-known/jwks.json", Issuer: s.URL, Audience: "eventreg-api"})
		for _, tok := range tokens {
			if _, err := fresh.Validate(bg(), tok); err != nil {
				t.Fatalf("%v (of %d tokens over %d keys)", err, len(tokens), len(kids))
			}
		}
	})
	t.Run("every replica-visible key state is consistent: one active, the rest pending or retired", func(t *testing.T) {
		active := 0
		for _, st := range s.KeyStatuses(t) {
			if st.State == signing.StateActive {
				active++
			}
			if st.State == signing.StateExpired {
				t.Fatalf("a key expired within the token lifetime: %+v", st)
			}
		}
		if active != 1 {
			t.Fatalf("%d active keys", active)
		}
	})

}

func TestReplicasAgreeOnTheSigningKey(t *testing.T) {
	s := authtest.Start(t, authtest.Options{Env: map[string]string{
		"KEY_ROTATION_PERIOD": "500ms", "KEY_ACTIVATION_DELAY": "300ms", "KEY_REFRESH_INTERVAL": "100ms"}})
	cfg := signing.Config{RotationPeriod: 500 * time.Millisecond, ActivationDelay: 300 * time.Millisecond, RefreshInterval: 100 * time.Millisecond, MaxTokenTTL: time.Hour}
	other := signing.NewManager(keydb.New(s.Pool), s.Config.KEK(), cfg, nil)
	if err := other.Reload(bg()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	go other.Run(ctx)
	replicas := []*signing.Manager{s.App.Keys, other}
	seen := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for len(seen) < 4 && time.Now().Before(deadline) {
		for i, r := range replicas {
			kid := r.SigningKID()
			seen[kid] = true
			for j, o := range replicas {
				if !o.Publishes(kid) {
					t.Fatalf("replica %d signs with %s, which replica %d does not publish", i, kid, j)
				}
			}
		}
		time.Sleep(10 * time.Millisecond) // sampling rate of the check, not a wait for readiness
	}
	if len(seen) < 4 {
		t.Fatalf("only %d keys signed", len(seen))
	}
}
