// Package signing owns the signing keys: creation, encryption at rest, scheduled rotation, emergency revocation, the JWKS, ES256 signing and verification of RFC 9068 access tokens, and signing of webhook tokens.
package signing

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// Alg is the signing algorithm of every key.
const Alg = "ES256"

// Token types (the JWS typ header) signed with the keys. Verify accepts
// access tokens only, so a webhook token is never taken for one.
const (
	TypeAccessToken = "at+jwt"
	TypeWebhook     = "webhook+jwt"
)

// Key is a stored signing key.
type Key struct {
	KID         string
	Alg         string
	PublicJWK   []byte // JSON of the public JWK
	PrivateEnc  []byte // AES-256-GCM sealed PKCS#8 DER
	CreatedAt   time.Time
	ActivatesAt time.Time
	// RevokedAt is when the key was revoked (zero: it is not).
	RevokedAt time.Time
}

// Store keeps keys.
type Store interface {
	// List returns every key ordered by activation time.
	List(ctx context.Context) ([]Key, error)
	// Locked runs decide while holding the rotation lock (one replica at a
	// time) and inserts the keys it returns.
	Locked(ctx context.Context, decide func(existing []Key) ([]Key, error)) error
}

// Revoker is a Store that can also revoke keys.
type Revoker interface {
	// Revoke runs decide under the rotation lock and, unless it fails, marks
	// kid revoked at revokedAt and inserts the keys decide returns, in one
	// transaction.
	Revoke(ctx context.Context, kid string, revokedAt time.Time, decide func(existing []Key) ([]Key, error)) error
}

// Errors of Revoke.
var (
	ErrUnknownKey     = errors.New("no signing key has this kid")
	ErrAlreadyRevoked = errors.New("the signing key is already revoked")
)

// Config tunes rotation.
type Config struct {
	// RotationPeriod is the age at which a new key is made.
	RotationPeriod time.Duration
	// ActivationDelay: a new key is published this long before it signs.
	ActivationDelay time.Duration
	// RefreshInterval: how often keys are re-read (and rotation considered).
	RefreshInterval time.Duration
	// MaxTokenTTL is the longest access-token lifetime; a retired key stays
	// published this long (plus a margin) after its successor takes over.
	MaxTokenTTL time.Duration
}

// retentionMargin covers clock skew and validator leeway past a token's exp.
const retentionMargin = 5 * time.Minute

// Manager holds the keys of this replica.
type Manager struct {
	store Store
	kek   []byte
	cfg   Config
	log   *slog.Logger
	now   func() time.Time

	state   atomic.Pointer[ring]
	privMu  sync.Mutex
	private map[string]*ecdsa.PrivateKey
}

type ring struct {
	signer    *signer
	published jwk.Set
	jwks      []byte
	// pem is the signing key's public key as a PEM "PUBLIC KEY" block.
	pem []byte
}

type signer struct {
	kid string
	key *ecdsa.PrivateKey
	jwk jwk.Key
	// headers are the encoded protected headers by token type, the same
	// for every token of this key, so signing a token encodes only its claims.
	headers map[string][]byte
	es256   jws.Signer
}

// newSigner prepares key to sign compact JWS with the header
// {"alg":"ES256","kid":kid,"typ":T} for each token type T.
func newSigner(kid string, key *ecdsa.PrivateKey, pub jwk.Key) (*signer, error) {
	headers := map[string][]byte{}
	for _, typ := range []string{TypeAccessToken, TypeWebhook} {
		hdr, err := json.Marshal(struct {
			Alg string `json:"alg"`
			KID string `json:"kid"`
			Typ string `json:"typ"`
		}{jwa.ES256.String(), kid, typ})
		if err != nil {
			return nil, err
		}
		headers[typ] = base64.RawURLEncoding.AppendEncode(nil, hdr)
	}
	es256, err := jws.NewSigner(jwa.ES256)
	if err != nil {
		return nil, err
	}
	return &signer{kid: kid, key: key, jwk: pub, headers: headers, es256: es256}, nil
}

// NewManager returns a manager; call Ensure then Reload (or Run) before signing.
func NewManager(store Store, kek []byte, cfg Config, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{store: store, kek: kek, cfg: cfg, log: log, now: time.Now, private: map[string]*ecdsa.PrivateKey{}}
}

// SetClock replaces the clock (tests).
func (m *Manager) SetClock(now func() time.Time) { m.now = now }

// State is where a key stands at a moment.
type State string

// Key states.
const (
	StatePending State = "pending" // published, not signing yet
	StateActive  State = "active"  // signs new tokens
	StateRetired State = "retired" // published for tokens it signed
	StateExpired State = "expired" // no longer published
	StateRevoked State = "revoked" // never published nor signing again
)

// Status is a key with its state, for operators.
type Status struct {
	KID         string    `json:"kid"`
	Alg         string    `json:"alg"`
	State       State     `json:"state"`
	CreatedAt   time.Time `json:"createdAt"`
	ActivatesAt time.Time `json:"activatesAt"`
	// RetiredAt is when a newer key took over (zero while none has).
	RetiredAt time.Time `json:"retiredAt,omitzero"`
	// UnpublishAt is when the key leaves the JWKS (zero while not retired).
	UnpublishAt time.Time `json:"unpublishAt,omitzero"`
	// RevokedAt is when the key was revoked (zero while it is not).
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// Describe computes every key's state at now, ordered by activation. A
// revoked key is out of the succession: the others take their states as if
// it had never been.
func Describe(keys []Key, now time.Time, maxTTL time.Duration) []Status {
	sorted := append([]Key(nil), keys...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ActivatesAt.Before(sorted[j].ActivatesAt) })
	out := make([]Status, len(sorted))
	var usable []int // indexes of the keys not revoked
	for i, k := range sorted {
		out[i] = Status{KID: k.KID, Alg: k.Alg, CreatedAt: k.CreatedAt, ActivatesAt: k.ActivatesAt, RevokedAt: k.RevokedAt}
		if k.RevokedAt.IsZero() {
			usable = append(usable, i)
		} else {
			out[i].State = StateRevoked
		}
	}
	active := -1
	for j, i := range usable {
		if !sorted[i].ActivatesAt.After(now) {
			active = j
		}
	}
	for j, i := range usable {
		st := &out[i]
		switch {
		case sorted[i].ActivatesAt.After(now):
			st.State = StatePending
		case j == active:
			st.State = StateActive
		default:
			// Retired when the next key that has activated took over.
			st.RetiredAt = sorted[usable[j+1]].ActivatesAt
			st.UnpublishAt = st.RetiredAt.Add(maxTTL + retentionMargin)
			st.State = StateRetired
			if !now.Before(st.UnpublishAt) {
				st.State = StateExpired
			}
		}
	}
	return out
}

// NewKey makes an ES256 key that signs from activatesAt, its private part sealed with kek.
func NewKey(kek []byte, now, activatesAt time.Time) (Key, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Key{}, fmt.Errorf("generating key: %w", err)
	}
	pub, err := jwk.FromRaw(priv.Public())
	if err != nil {
		return Key{}, fmt.Errorf("building JWK: %w", err)
	}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return Key{}, fmt.Errorf("thumbprint: %w", err)
	}
	kid := base64.RawURLEncoding.EncodeToString(tp)
	_ = pub.Set(jwk.KeyIDKey, kid)
	_ = pub.Set(jwk.AlgorithmKey, jwa.ES256)
	_ = pub.Set(jwk.KeyUsageKey, jwk.ForSignature)
	pubJSON, err := json.Marshal(pub)
	if err != nil {
		return Key{}, fmt.Errorf("encoding JWK: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return Key{}, fmt.Errorf("encoding private key: %w", err)
	}
	sealed, err := seal(kek, kid, der)
	if err != nil {
		return Key{}, err
	}
	return Key{KID: kid, Alg: Alg, PublicJWK: pubJSON, PrivateEnc: sealed, CreatedAt: now, ActivatesAt: activatesAt}, nil
}

// Ensure makes the first key (signing at once) when no key signs yet.
func (m *Manager) Ensure(ctx context.Context) error {
	return m.store.Locked(ctx, func(existing []Key) ([]Key, error) {
		now := m.now()
		for _, k := range existing {
			if k.RevokedAt.IsZero() && !k.ActivatesAt.After(now) {
				return nil, nil
			}
		}
		k, err := NewKey(m.kek, now, now)
		if err != nil {
			return nil, err
		}
		m.log.Info("created the first signing key", "kid", k.KID)
		return []Key{k}, nil
	})
}

// Rotate makes a new key, published now and signing after the activation delay.
func (m *Manager) Rotate(ctx context.Context) (Key, error) {
	var made Key
	err := m.store.Locked(ctx, func([]Key) ([]Key, error) {
		now := m.now()
		k, err := NewKey(m.kek, now, now.Add(m.cfg.ActivationDelay))
		made = k
		return []Key{k}, err
	})
	return made, err
}

// MaybeRotate makes a new key when the newest one is older than the rotation period.
func (m *Manager) MaybeRotate(ctx context.Context) error {
	return m.store.Locked(ctx, func(existing []Key) ([]Key, error) {
		now := m.now()
		var newest time.Time
		for _, k := range existing {
			if k.CreatedAt.After(newest) {
				newest = k.CreatedAt
			}
		}
		if len(existing) == 0 || now.Sub(newest) < m.cfg.RotationPeriod {
			return nil, nil // the first key is Ensure's
		}
		k, err := NewKey(m.kek, now, now.Add(m.cfg.ActivationDelay))
		if err != nil {
			return nil, err
		}
		m.log.Info("rotating signing keys", "kid", k.KID, "activates_at", k.ActivatesAt)
		return []Key{k}, nil
	})
}

// Revocation is what Revoke did.
type Revocation struct {
	KID       string
	RevokedAt time.Time
	// Replacement is the key made to sign in the revoked key's place; nil
	// when another key signs.
	Replacement *Key
}

// Revoke revokes kid for good: from its next reload no replica publishes it
// or signs with it. When kid is the key that signs (or no other key does), a
// new key is made in the same transaction, signing at once: its activation is
// the revoked key's (now when that one was pending), so every replica takes
// it over whatever its clock. That skips the activation delay; validators
// fetch the JWKS again on a kid they do not know.
func (m *Manager) Revoke(ctx context.Context, kid string) (Revocation, error) {
	store, ok := m.store.(Revoker)
	if !ok {
		return Revocation{}, errors.New("this key store cannot revoke keys")
	}
	now := m.now()
	rev := Revocation{KID: kid, RevokedAt: now}
	err := store.Revoke(ctx, kid, now, func(existing []Key) ([]Key, error) {
		rev.Replacement = nil // decide may run again when the transaction is retried
		statuses := Describe(existing, now, m.cfg.MaxTokenTTL)
		i := slices.IndexFunc(statuses, func(st Status) bool { return st.KID == kid })
		switch {
		case i < 0:
			return nil, ErrUnknownKey
		case statuses[i].State == StateRevoked:
			return nil, ErrAlreadyRevoked
		}
		if slices.ContainsFunc(statuses, func(st Status) bool { return st.KID != kid && st.State == StateActive }) {
			return nil, nil
		}
		activatesAt := now
		if statuses[i].State == StateActive {
			activatesAt = statuses[i].ActivatesAt
		}
		k, err := NewKey(m.kek, now, activatesAt)
		if err != nil {
			return nil, fmt.Errorf("making a key to sign instead: %w", err)
		}
		rev.Replacement = &k
		return []Key{k}, nil
	})
	if err != nil {
		return Revocation{}, err
	}
	if rev.Replacement != nil {
		m.log.Warn("revoked the signing key; a new key signs in its place", "kid", kid, "new_kid", rev.Replacement.KID)
	} else {
		m.log.Warn("revoked a signing key", "kid", kid)
	}
	return rev, nil
}

// Reload reads the keys and rebuilds the published set and the signer.
func (m *Manager) Reload(ctx context.Context) error {
	keys, err := m.store.List(ctx)
	if err != nil {
		return err
	}
	now := m.now()
	statuses := Describe(keys, now, m.cfg.MaxTokenTTL)
	byKID := map[string]Key{}
	for _, k := range keys {
		byKID[k.KID] = k
	}
	set := jwk.NewSet()
	var sig *signer
	for _, st := range statuses {
		if st.State == StateRevoked {
			m.forgetPrivateKey(st.KID)
		}
		if st.State == StateExpired || st.State == StateRevoked {
			continue
		}
		k := byKID[st.KID]
		pub, err := jwk.ParseKey(k.PublicJWK)
		if err != nil {
			return fmt.Errorf("parsing public key %s: %w", k.KID, err)
		}
		_ = set.AddKey(pub)
		if st.State == StateActive {
			priv, err := m.privateKey(k)
			if err != nil {
				return err
			}
			if sig, err = newSigner(k.KID, priv, pub); err != nil {
				return fmt.Errorf("preparing signing key %s: %w", k.KID, err)
			}
		}
	}
	if sig == nil {
		return errors.New("no signing key is active (run `auth serve` once to create one)")
	}
	b, err := json.Marshal(set)
	if err != nil {
		return fmt.Errorf("encoding JWKS: %w", err)
	}
	pemKey, err := publicKeyPEM(&sig.key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding the public key of %s as PEM: %w", sig.kid, err)
	}
	m.state.Store(&ring{signer: sig, published: set, jwks: b, pem: pemKey})
	return nil
}

// publicKeyPEM is pub as an X.509 SubjectPublicKeyInfo in a PEM block
// "PUBLIC KEY", what openssl, Node's crypto and every JOSE library read.
func publicKeyPEM(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func (m *Manager) forgetPrivateKey(kid string) {
	m.privMu.Lock()
	defer m.privMu.Unlock()
	delete(m.private, kid)
}

func (m *Manager) privateKey(k Key) (*ecdsa.PrivateKey, error) {
	m.privMu.Lock()
	defer m.privMu.Unlock()
	if p, ok := m.private[k.KID]; ok {
		return p, nil
	}
	der, err := open(m.kek, k.KID, k.PrivateEnc)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", k.KID, err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("key %s: parsing private key: %w", k.KID, err)
	}
	p, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key %s: not an ECDSA key", k.KID)
	}
	m.private[k.KID] = p
	return p, nil
}

// Run rotates when due and reloads every RefreshInterval until ctx ends.
// Failures are logged; the last good keys stay in use.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m.state.Load() == nil {
			if err := m.Ensure(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("creating the first signing key failed", "error", err.Error())
			}
		}
		if err := m.MaybeRotate(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("key rotation check failed", "error", err)
		}
		if err := m.Reload(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("reloading signing keys failed", "error", err)
		}
	}
}

// Ready reports whether a signing key is loaded.
func (m *Manager) Ready(context.Context) error {
	if m.state.Load() == nil {
		return errors.New("signing keys not loaded")
	}
	return nil
}

// SigningKID returns the id of the key that signs now ("" before the first load).
func (m *Manager) SigningKID() string {
	if r := m.state.Load(); r != nil {
		return r.signer.kid
	}
	return ""
}

// Publishes reports whether kid is in this replica's JWKS.
func (m *Manager) Publishes(kid string) bool {
	r := m.state.Load()
	if r == nil {
		return false
	}
	_, ok := r.published.LookupKeyID(kid)
	return ok
}

// WebhookKeyPEM returns the public key of the key that signs now as PEM
// (X.509 SubjectPublicKeyInfo), nil before the first load: the real API's
// GET /api/webhooks/key. One key only, since PEM readers take the first
// block; receivers fetch it again when a signature fails (decision 0098).
func (m *Manager) WebhookKeyPEM() []byte {
	if r := m.state.Load(); r != nil {
		return r.pem
	}
	return nil
}

// JWKS returns the published key set as JSON.
func (m *Manager) JWKS() []byte {
	r := m.state.Load()
	if r == nil {
		return []byte(`{"keys":[]}`)
	}
	return r.jwks
}

// Sign signs payload (JSON claims) as an access token: a compact JWS with
// header typ at+jwt and the active key's kid. It is jwx's ES256 signer over
// the header encoded once per key and the payload (RFC 7515 §7.1), which
// saves building, merging and encoding the header for every token.
func (m *Manager) Sign(payload []byte) (string, error) { return m.sign(TypeAccessToken, payload) }

// SignWebhook signs payload (JSON claims) as a webhook token: header typ
// webhook+jwt, the active key's kid, so receivers verify it against the
// JWKS, and no validator of access tokens accepts it.
func (m *Manager) SignWebhook(payload []byte) (string, error) { return m.sign(TypeWebhook, payload) }

func (m *Manager) sign(typ string, payload []byte) (string, error) {
	r := m.state.Load()
	if r == nil {
		return "", errors.New("signing keys not loaded")
	}
	s, enc := r.signer, base64.RawURLEncoding
	header := s.headers[typ]
	out := make([]byte, 0, len(header)+enc.EncodedLen(len(payload))+2+enc.EncodedLen(64))
	out = append(out, header...)
	out = append(out, '.')
	out = enc.AppendEncode(out, payload)
	sig, err := s.es256.Sign(out, s.key)
	if err != nil {
		return "", fmt.Errorf("signing token: %w", err)
	}
	out = append(out, '.')
	out = enc.AppendEncode(out, sig)
	return string(out), nil
}

// Verify checks a compact JWS against the published keys and returns its
// payload. Only access tokens (typ at+jwt) pass: a webhook token signed by
// the same key is refused.
func (m *Manager) Verify(raw string) ([]byte, error) {
	r := m.state.Load()
	if r == nil {
		return nil, errors.New("signing keys not loaded")
	}
	if len(raw) > 8192 {
		return nil, errors.New("token too long")
	}
	msg := jws.NewMessage()
	payload, err := jws.Verify([]byte(raw), jws.WithKeySet(r.published, jws.WithRequireKid(true)), jws.WithMessage(msg))
	if err != nil {
		return nil, err
	}
	if sigs := msg.Signatures(); len(sigs) != 1 || sigs[0].ProtectedHeaders().Type() != TypeAccessToken {
		return nil, errors.New("not an access token (typ is not at+jwt)")
	}
	return payload, nil
}
