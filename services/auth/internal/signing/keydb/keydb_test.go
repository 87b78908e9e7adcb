package keydb_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/signing"
	"github.com/eventreg/eventreg/services/auth/internal/signing/keydb"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func newStore(t *testing.T) *keydb.Store {
	t.Helper()
	return keydb.New(authtest.NewPool(t))
}

var cfg = signing.Config{RotationPeriod: 24 * time.Hour, ActivationDelay: 10 * time.Minute, RefreshInterval: time.Second, MaxTokenTTL: time.Hour}

func replica(t *testing.T, store *keydb.Store) *signing.Manager {
	t.Helper()
	m := signing.NewManager(store, bytes.Repeat([]byte{7}, 32), cfg, nil)
	if err := m.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

func published(t *testing.T, m *signing.Manager) map[string]bool {
	t.Helper()
	set, err := jwk.Parse(m.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for i := range set.Len() {
		k, _ := set.Key(i)
		out[k.KeyID()] = true
	}
	return out
}

func signingKID(t *testing.T, m *signing.Manager) string {
	t.Helper()
	tok, err := m.Sign([]byte(`{"sub":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := jws.ParseString(tok)
	if err != nil {
		t.Fatal(err)
	}
	return msg.Signatures()[0].ProtectedHeaders().KeyID()
}

func TestRevokeTheSigningKey(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	a, b := replica(t, store), replica(t, store)
	compromised := signingKID(t, a)
	pending, err := a.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}

	rev, err := a.Revoke(ctx, compromised)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Replacement == nil {
		t.Fatal("revoking the signing key made no new key")
	}
	fresh := rev.Replacement.KID
	if signingKID(t, b) != compromised {
		t.Fatal("a replica changed keys before its reload")
	}
	for name, m := range map[string]*signing.Manager{"the replica that revoked": a, "another replica": b} {
		t.Run(name+" drops the key at its next reload and signs with the new one", func(t *testing.T) {
			if err := m.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			keys := published(t, m)
			if keys[compromised] || !keys[fresh] || !keys[pending.KID] {
				t.Fatalf("published %v; revoked %s, new %s, pending %s", keys, compromised, fresh, pending.KID)
			}
			if kid := signingKID(t, m); kid != fresh {
				t.Fatalf("signs with %s, want the new key %s", kid, fresh)
			}
		})
	}
	t.Run("the store lists the key as revoked", func(t *testing.T) {
		keys, err := store.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range signing.Describe(keys, time.Now(), cfg.MaxTokenTTL) {
			if st.Alg == signing.AlgRS256 {
				if st.State != signing.StateActive {
					t.Fatalf("the RS256 key is %s after an ES256 key was revoked", st.State)
				}
				continue
			}
			want := map[string]signing.State{compromised: signing.StateRevoked, fresh: signing.StateActive, pending.KID: signing.StatePending}[st.KID]
			if st.State != want || (st.KID == compromised) == st.RevokedAt.IsZero() {
				t.Fatalf("%+v, want %s", st, want)
			}
		}
	})
	t.Run("revoking it again or an unknown kid is refused", func(t *testing.T) {
		if _, err := a.Revoke(ctx, compromised); !errors.Is(err, signing.ErrAlreadyRevoked) {
			t.Fatalf("%v", err)
		}
		if _, err := a.Revoke(ctx, "no-such-kid"); !errors.Is(err, signing.ErrUnknownKey) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a replica starting afresh neither publishes nor makes a key for it", func(t *testing.T) {
		c := replica(t, store)
		if published(t, c)[compromised] || signingKID(t, c) != fresh {
			t.Fatal("a new replica uses the revoked key")
		}
		keys, _ := store.List(ctx)
		if len(keys) != 4 { // ES256: revoked, replacement, pending; RS256: one
			t.Fatalf("%d keys", len(keys))
		}
	})
}
