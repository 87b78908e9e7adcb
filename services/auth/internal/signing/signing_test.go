package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	jwtv5 "github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

func kek() []byte { return bytes.Repeat([]byte{7}, 32) }

// readyManager is a manager over an empty in-memory store, its keys made and loaded.
func readyManager(t *testing.T) *Manager {
	t.Helper()
	m := NewManager(&memStore{}, kek(), Config{RotationPeriod: 24 * time.Hour, ActivationDelay: 2 * time.Minute, RefreshInterval: time.Second, MaxTokenTTL: time.Hour}, nil)
	ctx := context.Background()
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

// protectedHeaders parses the compact JWS tok and returns its first signature's protected header.
func protectedHeaders(t *testing.T, tok string) jws.Headers {
	t.Helper()
	msg, err := jws.ParseString(tok)
	if err != nil {
		t.Fatal(err)
	}
	return msg.Signatures()[0].ProtectedHeaders()
}

func TestKeyEncryption(t *testing.T) {
	t.Run("sealed keys open with the same key-encryption key and kid", func(t *testing.T) {
		sealed, err := seal(kek(), "kid-1", []byte("private"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(sealed, []byte("private")) {
			t.Fatal("plaintext visible")
		}
		plain, err := open(kek(), "kid-1", sealed)
		if err != nil || string(plain) != "private" {
			t.Fatalf("%q %v", plain, err)
		}
	})
	t.Run("a wrong key-encryption key or a moved row does not open", func(t *testing.T) {
		sealed, _ := seal(kek(), "kid-1", []byte("private"))
		if _, err := open(bytes.Repeat([]byte{8}, 32), "kid-1", sealed); err == nil {
			t.Fatal("opened with another KEK")
		}
		if _, err := open(kek(), "kid-2", sealed); err == nil {
			t.Fatal("opened under another kid")
		}
	})
	t.Run("a new key stores no private part in the clear", func(t *testing.T) {
		k, err := NewKey(kek(), time.Now(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var pub map[string]any
		_ = json.Unmarshal(k.PublicJWK, &pub)
		if pub["d"] != nil || pub["kid"] != k.KID || pub["alg"] != "ES256" {
			t.Fatalf("%v", pub)
		}
	})
}

func TestDescribe(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := []Key{{KID: "a", ActivatesAt: t0}, {KID: "b", ActivatesAt: t0.Add(24 * time.Hour)}, {KID: "c", ActivatesAt: t0.Add(48 * time.Hour)}}
	state := func(now time.Time) string {
		var out string
		for _, s := range Describe(keys, now, time.Hour) {
			out += s.KID + "=" + string(s.State) + " "
		}
		return out
	}
	cases := map[time.Duration]string{
		time.Hour:                     "a=active b=pending c=pending ",
		24*time.Hour + time.Minute:    "a=retired b=active c=pending ",
		25*time.Hour + 4*time.Minute:  "a=retired b=active c=pending ",
		25*time.Hour + 6*time.Minute:  "a=expired b=active c=pending ",
		49*time.Hour + 10*time.Minute: "a=expired b=expired c=active ",
	}
	for at, want := range cases {
		if got := state(t0.Add(at)); got != want {
			t.Errorf("at +%v: %s, want %s", at, got, want)
		}
	}
}

// memStore is an in-memory key store for unit tests (keydb is tested in the integration tests).
type memStore struct {
	mu   sync.Mutex
	keys []Key
}

func (m *memStore) List(context.Context) ([]Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]Key(nil), m.keys...)
	sort.Slice(out, func(i, j int) bool { return out[i].ActivatesAt.Before(out[j].ActivatesAt) })
	return out, nil
}

func (m *memStore) Locked(ctx context.Context, decide func([]Key) ([]Key, error)) error {
	existing, _ := m.List(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	add, err := decide(existing)
	m.keys = append(m.keys, add...)
	return err
}

func TestRotation(t *testing.T) {
	store := &memStore{}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewManager(store, kek(), Config{RotationPeriod: 24 * time.Hour, ActivationDelay: 2 * time.Minute, RefreshInterval: time.Second, MaxTokenTTL: time.Hour}, nil)
	m.SetClock(func() time.Time { return now })
	ctx := context.Background()
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Ensure(ctx); err != nil || len(store.keys) != 2 {
		t.Fatalf("Ensure is not idempotent: %d keys, want one per algorithm", len(store.keys))
	}
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	first, firstRSA := store.keys[0].KID, store.keys[1].KID
	if store.keys[0].Alg != AlgES256 || store.keys[1].Alg != AlgRS256 {
		t.Fatalf("first keys %s, %s; want ES256, RS256", store.keys[0].Alg, store.keys[1].Alg)
	}
	sign := func() string {
		tok, err := m.Sign([]byte(`{"sub":"1"}`))
		if err != nil {
			t.Fatal(err)
		}
		h := protectedHeaders(t, tok)
		if h.Type() != "at+jwt" {
			t.Fatalf("typ %q", h.Type())
		}
		if _, err := m.Verify(tok); err != nil {
			t.Fatalf("own token does not verify: %v", err)
		}
		return h.KeyID()
	}
	published := func() map[string]bool {
		set, err := jwk.Parse(m.JWKS())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for i := 0; i < set.Len(); i++ {
			k, _ := set.Key(i)
			out[k.KeyID()] = true
		}
		return out
	}
	if sign() != first {
		t.Fatal("first key does not sign")
	}
	t.Run("no rotation before the period", func(t *testing.T) {
		now = now.Add(23 * time.Hour)
		_ = m.MaybeRotate(ctx)
		if len(store.keys) != 2 {
			t.Fatal("rotated early")
		}
	})
	t.Run("a new key of each algorithm is published before it signs", func(t *testing.T) {
		now = now.Add(2 * time.Hour)
		_ = m.MaybeRotate(ctx)
		_ = m.Reload(ctx)
		if len(store.keys) != 4 {
			t.Fatalf("did not rotate both algorithms: %d keys", len(store.keys))
		}
		firstPEM := m.WebhookKeyPEM()
		second, secondRSA := store.keys[2].KID, store.keys[3].KID
		if store.keys[2].Alg != AlgES256 || store.keys[3].Alg != AlgRS256 {
			t.Fatalf("rotated %s, %s", store.keys[2].Alg, store.keys[3].Alg)
		}
		if !published()[second] || !published()[secondRSA] || sign() != first || m.SigningKIDFor(AlgRS256) != firstRSA {
			t.Fatal("new keys must be published and not yet signing")
		}
		now = now.Add(3 * time.Minute)
		_ = m.Reload(ctx)
		if sign() != second || !published()[first] || m.SigningKIDFor(AlgRS256) != secondRSA || !published()[firstRSA] {
			t.Fatal("after the delay the new keys sign and the old stay published")
		}
		if bytes.Equal(m.WebhookKeyPEM(), firstPEM) {
			t.Fatal("the webhook key PEM is still the retired key's: it must be the key that signs")
		}
		t.Run("the retired keys leave the JWKS after the longest token lifetime", func(t *testing.T) {
			now = now.Add(time.Hour + 6*time.Minute)
			_ = m.Reload(ctx)
			if published()[first] || !published()[second] || published()[firstRSA] || !published()[secondRSA] {
				t.Fatalf("%v", published())
			}
		})
	})
}

func (m *memStore) Revoke(ctx context.Context, kid string, at time.Time, decide func([]Key) ([]Key, error)) error {
	existing, _ := m.List(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	add, err := decide(existing)
	if err != nil {
		return err
	}
	for i := range m.keys {
		if m.keys[i].KID == kid {
			m.keys[i].RevokedAt = at
		}
	}
	m.keys = append(m.keys, add...)
	return nil
}

func TestRevoke(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	setup := func(t *testing.T) (*Manager, *memStore, *time.Time) {
		store, now := &memStore{}, t0
		m := NewManager(store, kek(), Config{RotationPeriod: 24 * time.Hour, ActivationDelay: 2 * time.Minute, RefreshInterval: time.Second, MaxTokenTTL: time.Hour}, nil)
		m.SetClock(func() time.Time { return now })
		if err := m.Ensure(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
		return m, store, &now
	}
	t.Run("revoking a pending key makes no new key", func(t *testing.T) {
		m, store, _ := setup(t)
		pending, err := m.Rotate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rev, err := m.Revoke(context.Background(), pending.KID)
		if err != nil || rev.Replacement != nil || len(store.keys) != 3 {
			t.Fatalf("%+v %v, %d keys", rev, err, len(store.keys))
		}
		if err := m.Reload(context.Background()); err != nil || m.Publishes(pending.KID) || m.SigningKID() != store.keys[0].KID {
			t.Fatalf("%v: the revoked pending key is published or the active one no longer signs", err)
		}
	})
	t.Run("revoking the only key makes one that signs at once", func(t *testing.T) {
		m, store, _ := setup(t)
		only := store.keys[0]
		rev, err := m.Revoke(context.Background(), only.KID)
		if err != nil || rev.Replacement == nil || !rev.Replacement.ActivatesAt.Equal(only.ActivatesAt) {
			t.Fatalf("%+v %v", rev, err)
		}
		if err := m.Reload(context.Background()); err != nil || m.SigningKID() != rev.Replacement.KID || m.Publishes(only.KID) {
			t.Fatalf("%v: signs with %s", err, m.SigningKID())
		}
	})
	t.Run("a revoked key is out of the succession: the key before it does not sign again", func(t *testing.T) {
		m, store, now := setup(t)
		first := store.keys[0].KID
		second, _ := m.Rotate(context.Background())
		*now = now.Add(3 * time.Minute)
		rev, err := m.Revoke(context.Background(), second.KID)
		if err != nil || rev.Replacement == nil {
			t.Fatalf("%+v %v", rev, err)
		}
		states := map[string]State{}
		for _, st := range Describe(store.keys, *now, time.Hour) {
			states[st.KID] = st.State
		}
		if states[first] != StateRetired || states[second.KID] != StateRevoked || states[rev.Replacement.KID] != StateActive {
			t.Fatalf("%v", states)
		}
	})
	t.Run("an unknown or already revoked kid is refused and changes nothing", func(t *testing.T) {
		m, store, _ := setup(t)
		if _, err := m.Revoke(context.Background(), "no-such-kid"); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("%v", err)
		}
		kid := store.keys[0].KID
		if _, err := m.Revoke(context.Background(), kid); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Revoke(context.Background(), kid); !errors.Is(err, ErrAlreadyRevoked) {
			t.Fatalf("%v", err)
		}
		if len(store.keys) != 3 {
			t.Fatalf("%d keys", len(store.keys))
		}
	})
	t.Run("revoking the RS256 key makes an RS256 key in its place; the ES256 key signs on", func(t *testing.T) {
		m, store, _ := setup(t)
		if err := m.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		es, rs := m.SigningKIDFor(AlgES256), m.SigningKIDFor(AlgRS256)
		rev, err := m.Revoke(context.Background(), rs)
		if err != nil || rev.Replacement == nil || rev.Replacement.Alg != AlgRS256 {
			t.Fatalf("%+v %v", rev, err)
		}
		if err := m.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		if m.SigningKIDFor(AlgRS256) != rev.Replacement.KID || m.SigningKIDFor(AlgES256) != es || m.Publishes(rs) || len(store.keys) != 3 {
			t.Fatalf("RS256 signs with %s, ES256 with %s (was %s)", m.SigningKIDFor(AlgRS256), m.SigningKIDFor(AlgES256), es)
		}
	})
}

func TestDescribeKeepsASuccessionPerAlgorithm(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := []Key{{KID: "e1", Alg: AlgES256, ActivatesAt: t0}, {KID: "r1", Alg: AlgRS256, ActivatesAt: t0.Add(time.Hour)},
		{KID: "e2", Alg: AlgES256, ActivatesAt: t0.Add(2 * time.Hour)}}
	got := map[string]State{}
	for _, s := range Describe(keys, t0.Add(3*time.Hour), time.Hour) {
		got[s.KID] = s.State
	}
	// A newer RS256 key does not retire the ES256 key, nor the reverse.
	if got["e1"] != StateRetired || got["e2"] != StateActive || got["r1"] != StateActive {
		t.Fatalf("%v", got)
	}
}

func TestIDTokens(t *testing.T) {
	m := readyManager(t)
	set, err := jwk.Parse(m.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range Algs {
		t.Run(alg+": typ JWT, the algorithm's signing key, verifies against the JWKS, is no access token", func(t *testing.T) {
			tok, err := m.SignIDToken(alg, []byte(`{"sub":"1"}`))
			if err != nil {
				t.Fatal(err)
			}
			h := protectedHeaders(t, tok)
			if h.Type() != "JWT" || h.KeyID() != m.SigningKIDFor(alg) || h.Algorithm().String() != alg {
				t.Fatalf("header typ %q kid %q alg %q", h.Type(), h.KeyID(), h.Algorithm())
			}
			if _, err := jws.Verify([]byte(tok), jws.WithKeySet(set)); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Verify(tok); err == nil {
				t.Fatal("an ID token verified as an access token")
			}
			if p, err := m.VerifyIDToken(tok); err != nil || string(p) != `{"sub":"1"}` {
				t.Fatalf("VerifyIDToken: %s %v", p, err)
			}
			at, _ := m.Sign([]byte(`{"sub":"1"}`))
			if _, err := m.VerifyIDToken(at); err == nil {
				t.Fatal("an access token verified as an ID token")
			}
		})
	}
	t.Run("an unknown algorithm signs nothing", func(t *testing.T) {
		if _, err := m.SignIDToken("HS256", []byte(`{}`)); err == nil {
			t.Fatal("signed with HS256")
		}
	})
	t.Run("the JWKS publishes one key of each algorithm, public parts only", func(t *testing.T) {
		var doc struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := json.Unmarshal(m.JWKS(), &doc); err != nil {
			t.Fatal(err)
		}
		algs := map[any]int{}
		for _, k := range doc.Keys {
			algs[k["alg"]]++
			if k["d"] != nil || k["p"] != nil || k["use"] != "sig" {
				t.Fatalf("%v", k)
			}
		}
		if algs["ES256"] != 1 || algs["RS256"] != 1 {
			t.Fatalf("%v", algs)
		}
	})
}

func TestWebhookTokens(t *testing.T) {
	ctx := context.Background()
	m := readyManager(t)
	tok, err := m.SignWebhook([]byte(`{"jti":"d1"}`))
	if err != nil {
		t.Fatal(err)
	}
	h := protectedHeaders(t, tok)
	t.Run("typ webhook+jwt, the signing key's kid, ES256", func(t *testing.T) {
		if h.Type() != "webhook+jwt" || h.KeyID() != m.SigningKID() || h.Algorithm().String() != "ES256" {
			t.Fatalf("header typ %q kid %q alg %q", h.Type(), h.KeyID(), h.Algorithm())
		}
	})
	t.Run("it verifies against the published keys", func(t *testing.T) {
		set, err := jwk.Parse(m.JWKS())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jws.Verify([]byte(tok), jws.WithKeySet(set)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("it verifies with golang-jwt against the PEM the webhook key endpoint serves", func(t *testing.T) {
		pemKey := m.WebhookKeyPEM()
		if !bytes.HasPrefix(pemKey, []byte("-----BEGIN PUBLIC KEY-----\n")) || bytes.Count(pemKey, []byte("-----BEGIN")) != 1 {
			t.Fatalf("PEM %s", pemKey)
		}
		pub, err := jwtv5.ParseECPublicKeyFromPEM(pemKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jwtv5.Parse(tok, func(*jwtv5.Token) (any, error) { return pub, nil }, jwtv5.WithValidMethods([]string{"ES256"})); err != nil {
			t.Fatal(err)
		}
		other, _ := NewKey(kek(), time.Now(), time.Now())
		otherRSA, _ := NewKeyFor(AlgRS256, kek(), time.Now(), time.Now())
		m2 := NewManager(&memStore{keys: []Key{other, otherRSA}}, kek(), m.cfg, nil)
		if err := m2.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		otherPub, err := jwtv5.ParseECPublicKeyFromPEM(m2.WebhookKeyPEM())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jwtv5.Parse(tok, func(*jwtv5.Token) (any, error) { return otherPub, nil }, jwtv5.WithValidMethods([]string{"ES256"})); err == nil {
			t.Fatal("another key's PEM verified the token")
		}
	})
	t.Run("Verify, which reads access tokens, refuses it", func(t *testing.T) {
		if _, err := m.Verify(tok); err == nil {
			t.Fatal("a webhook token verified as an access token")
		}
	})
}
