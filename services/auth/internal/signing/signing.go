// Package signing owns the signing keys: creation, encryption at rest, scheduled rotation, emergency revocation, the JWKS, ES256 signing and verification of RFC 9068 access tokens, signing of webhook tokens, and ES256 or RS256 signing of OpenID Connect ID tokens.
package signing

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// Signing algorithms. Each has its own succession of keys, rotated and
// revoked alike (decision 0100): ES256 signs access tokens, webhook tokens
// and the ID tokens of clients that ask for it; RS256 signs the ID tokens of
// every other client, as OpenID Connect requires it be offered.
const (
	AlgES256 = "ES256"
	AlgRS256 = "RS256"
)

// Alg is the algorithm of the access-token keys.
const Alg = AlgES256

// Algs are the algorithms a key is kept for, each with a key that signs.
var Algs = []string{AlgES256, AlgRS256}

// rsaBits is the size of RS256 keys.
const rsaBits = 2048

// Token types (the JWS typ header) signed with the keys. Verify accepts
// access tokens only, so neither a webhook token nor an ID token is ever
// taken for one.
const (
	TypeAccessToken = "at+jwt"
	TypeWebhook     = "webhook+jwt"
	TypeIDToken     = "JWT"
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
	private map[string]crypto.Signer
}

type ring struct {
	// signers are the active key of each algorithm.
	signers   map[string]*signer
	published jwk.Set
	jwks      []byte
	// pem is the signing key's public key as a PEM "PUBLIC KEY" block.
	pem []byte
}

type signer struct {
	kid string
	key crypto.Signer
	jwk jwk.Key
	// headers are the encoded protected headers by token type, the same
	// for every token of this key, so signing a token encodes only its claims.
	headers map[string][]byte
	jws     jws.Signer
}

// newSigner prepares key to sign compact JWS with the header
// {"alg":alg,"kid":kid,"typ":T} for each token type T the algorithm signs.
func newSigner(alg, kid string, key crypto.Signer, pub jwk.Key) (*signer, error) {
	types := []string{TypeIDToken}
	if alg == AlgES256 {
		types = append(types, TypeAccessToken, TypeWebhook)
	}
	headers := map[string][]byte{}
	for _, typ := range types {
		hdr, err := json.Marshal(struct {
			Alg string `json:"alg"`
			KID string `json:"kid"`
			Typ string `json:"typ"`
		}{alg, kid, typ})
		if err != nil {
			return nil, err
		}
		headers[typ] = base64.RawURLEncoding.AppendEncode(nil, hdr)
	}
	js, err := jws.NewSigner(jwa.SignatureAlgorithm(alg))
	if err != nil {
		return nil, err
	}
	return &signer{kid: kid, key: key, jwk: pub, headers: headers, jws: js}, nil
}

// NewManager returns a manager; call Ensure then Reload (or Run) before signing.
func NewManager(store Store, kek []byte, cfg Config, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{store: store, kek: kek, cfg: cfg, log: log, now: time.Now, private: map[string]crypto.Signer{}}
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

// algOf is the algorithm of k: ES256 for keys stored without one.
func algOf(k Key) string {
	if k.Alg == "" {
		return AlgES256
	}
	return k.Alg
}

// Describe computes every key's state at now, ordered by activation. The
// keys of each algorithm are a succession of their own. A revoked key is
// out of its succession: the others take their states as if it had never
// been.
func Describe(keys []Key, now time.Time, maxTTL time.Duration) []Status {
	sorted := append([]Key(nil), keys...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ActivatesAt.Before(sorted[j].ActivatesAt) })
	out := make([]Status, len(sorted))
	usable := map[string][]int{} // indexes of the keys not revoked, by algorithm
	for i, k := range sorted {
		out[i] = Status{KID: k.KID, Alg: k.Alg, CreatedAt: k.CreatedAt, ActivatesAt: k.ActivatesAt, RevokedAt: k.RevokedAt}
		if k.RevokedAt.IsZero() {
			usable[algOf(k)] = append(usable[algOf(k)], i)
		} else {
			out[i].State = StateRevoked
		}
	}
	for _, idx := range usable {
		describeSuccession(sorted, out, idx, now, maxTTL)
	}
	return out
}

// describeSuccession sets the states of the keys sorted[usable...], one
// algorithm's keys not revoked, in activation order.
func describeSuccession(sorted []Key, out []Status, usable []int, now time.Time, maxTTL time.Duration) {
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
}

// NewKey makes an ES256 key that signs from activatesAt, its private part sealed with kek.
func NewKey(kek []byte, now, activatesAt time.Time) (Key, error) {
	return NewKeyFor(AlgES256, kek, now, activatesAt)
}

// generate makes a private key for alg.
func generate(alg string) (crypto.Signer, error) {
	switch alg {
	case AlgES256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case AlgRS256:
		return rsa.GenerateKey(rand.Reader, rsaBits)
	default:
		return nil, fmt.Errorf("unsupported signing algorithm %q", alg)
	}
}

// NewKeyFor makes a key for alg (ES256 or RS256) that signs from
// activatesAt, its private part sealed with kek.
func NewKeyFor(alg string, kek []byte, now, activatesAt time.Time) (Key, error) {
	priv, err := generate(alg)
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
	_ = pub.Set(jwk.AlgorithmKey, jwa.SignatureAlgorithm(alg))
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
	return Key{KID: kid, Alg: alg, PublicJWK: pubJSON, PrivateEnc: sealed, CreatedAt: now, ActivatesAt: activatesAt}, nil
}

// Ensure makes the first key of each algorithm (signing at once) when none
// of that algorithm signs yet: on a new database, and the first RS256 key
// of a database that had ES256 keys only.
func (m *Manager) Ensure(ctx context.Context) error {
	return m.store.Locked(ctx, func(existing []Key) ([]Key, error) {
		now := m.now()
		var add []Key
		for _, alg := range Algs {
			if slices.ContainsFunc(existing, func(k Key) bool {
				return algOf(k) == alg && k.RevokedAt.IsZero() && !k.ActivatesAt.After(now)
			}) {
				continue
			}
			k, err := NewKeyFor(alg, m.kek, now, now)
			if err != nil {
				return nil, err
			}
			m.log.Info("created the first signing key", "kid", k.KID, "alg", alg)
			add = append(add, k)
		}
		return add, nil
	})
}

// Rotate makes a new ES256 key (the access tokens'), published now and
// signing after the activation delay.
func (m *Manager) Rotate(ctx context.Context) (Key, error) { return m.RotateAlg(ctx, AlgES256) }

// RotateAlg makes a new key of alg, published now and signing after the
// activation delay.
func (m *Manager) RotateAlg(ctx context.Context, alg string) (Key, error) {
	if !slices.Contains(Algs, alg) {
		return Key{}, fmt.Errorf("unsupported signing algorithm %q (one of %s)", alg, strings.Join(Algs, ", "))
	}
	var made Key
	err := m.store.Locked(ctx, func([]Key) ([]Key, error) {
		k, err := NewKeyFor(alg, m.kek, m.now(), m.now())
		now := m.now()
		k.CreatedAt, k.ActivatesAt = now, now.Add(m.cfg.ActivationDelay)
		made = k
		return []Key{k}, err
	})
	return made, err
}

// MaybeRotate makes a new key of each algorithm whose newest key is older
// than the rotation period.
func (m *Manager) MaybeRotate(ctx context.Context) error {
	return m.store.Locked(ctx, func(existing []Key) ([]Key, error) {
		now := m.now()
		var add []Key
		for _, alg := range Algs {
			var newest time.Time
			for _, k := range existing {
				if algOf(k) == alg && k.CreatedAt.After(newest) {
					newest = k.CreatedAt
				}
			}
			if newest.IsZero() || now.Sub(newest) < m.cfg.RotationPeriod {
				continue // the first key is Ensure's
			}
			k, err := NewKeyFor(alg, m.kek, now, now)
			if err != nil {
				return nil, err
			}
			add = append(add, k)
		}
		// The delay counts from when the keys are made (an RSA key takes a
		// while), so that every replica reads them before they sign.
		made := m.now()
		for i := range add {
			add[i].CreatedAt, add[i].ActivatesAt = made, made.Add(m.cfg.ActivationDelay)
			m.log.Info("rotating signing keys", "kid", add[i].KID, "alg", add[i].Alg, "activates_at", add[i].ActivatesAt)
		}
		return add, nil
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
		alg := algOf(Key{Alg: statuses[i].Alg})
		if slices.ContainsFunc(statuses, func(st Status) bool {
			return st.KID != kid && st.State == StateActive && algOf(Key{Alg: st.Alg}) == alg
		}) {
			return nil, nil
		}
		activatesAt := now
		if statuses[i].State == StateActive {
			activatesAt = statuses[i].ActivatesAt
		}
		k, err := NewKeyFor(alg, m.kek, now, activatesAt)
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
	signers := map[string]*signer{}
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
			if signers[algOf(k)], err = newSigner(algOf(k), k.KID, priv, pub); err != nil {
				return fmt.Errorf("preparing signing key %s: %w", k.KID, err)
			}
		}
	}
	for _, alg := range Algs {
		if signers[alg] == nil {
			return fmt.Errorf("no %s signing key is active (run `auth serve` once to create one)", alg)
		}
	}
	b, err := json.Marshal(set)
	if err != nil {
		return fmt.Errorf("encoding JWKS: %w", err)
	}
	// Webhooks are signed by the ES256 key (decision 0098); its PEM is what
	// GET /api/webhooks/key serves.
	webhook := signers[AlgES256]
	pemKey, err := publicKeyPEM(webhook.key.Public())
	if err != nil {
		return fmt.Errorf("encoding the public key of %s as PEM: %w", webhook.kid, err)
	}
	m.state.Store(&ring{signers: signers, published: set, jwks: b, pem: pemKey})
	return nil
}

// publicKeyPEM is pub as an X.509 SubjectPublicKeyInfo in a PEM block
// "PUBLIC KEY", what openssl, Node's crypto and every JOSE library read.
func publicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
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

func (m *Manager) privateKey(k Key) (crypto.Signer, error) {
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
	var p crypto.Signer
	switch key := parsed.(type) {
	case *ecdsa.PrivateKey:
		p = key
	case *rsa.PrivateKey:
		p = key
	}
	if p == nil || !matchesAlg(p, algOf(k)) {
		return nil, fmt.Errorf("key %s: not a key for %s", k.KID, algOf(k))
	}
	m.private[k.KID] = p
	return p, nil
}

// matchesAlg reports whether p is a key of alg.
func matchesAlg(p crypto.Signer, alg string) bool {
	switch p.(type) {
	case *ecdsa.PrivateKey:
		return alg == AlgES256
	case *rsa.PrivateKey:
		return alg == AlgRS256
	}
	return false
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

// SigningKID returns the id of the key that signs access tokens now (""
// before the first load).
func (m *Manager) SigningKID() string { return m.SigningKIDFor(AlgES256) }

// SigningKIDFor returns the id of the key of alg that signs now ("" before
// the first load).
func (m *Manager) SigningKIDFor(alg string) string {
	if r := m.state.Load(); r != nil && r.signers[alg] != nil {
		return r.signers[alg].kid
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
func (m *Manager) Sign(payload []byte) (string, error) {
	return m.sign(AlgES256, TypeAccessToken, payload)
}

// SignWebhook signs payload (JSON claims) as a webhook token: header typ
// webhook+jwt, the active key's kid, so receivers verify it against the
// JWKS, and no validator of access tokens accepts it.
func (m *Manager) SignWebhook(payload []byte) (string, error) {
	return m.sign(AlgES256, TypeWebhook, payload)
}

// SignIDToken signs payload (JSON claims) as an OpenID Connect ID token
// with the active key of alg (ES256 or RS256): header typ JWT and the key's
// kid. Verify, which reads access tokens, refuses it.
func (m *Manager) SignIDToken(alg string, payload []byte) (string, error) {
	return m.sign(alg, TypeIDToken, payload)
}

func (m *Manager) sign(alg, typ string, payload []byte) (string, error) {
	r := m.state.Load()
	if r == nil {
		return "", errors.New("signing keys not loaded")
	}
	s, enc := r.signers[alg], base64.RawURLEncoding
	if s == nil {
		return "", fmt.Errorf("no %s signing key", alg)
	}
	header, ok := s.headers[typ]
	if !ok {
		return "", fmt.Errorf("%s keys do not sign %s tokens", alg, typ)
	}
	out := make([]byte, 0, len(header)+enc.EncodedLen(len(payload))+2+enc.EncodedLen(256))
	out = append(out, header...)
	out = append(out, '.')
	out = enc.AppendEncode(out, payload)
	sig, err := s.jws.Sign(out, s.key)
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
func (m *Manager) Verify(raw string) ([]byte, error) { return m.verify(raw, TypeAccessToken) }

// VerifyIDToken checks an ID token this server signed (typ JWT, a published
// key) and returns its payload; its claims are the caller's to check.
func (m *Manager) VerifyIDToken(raw string) ([]byte, error) { return m.verify(raw, TypeIDToken) }

func (m *Manager) verify(raw, typ string) ([]byte, error) {
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
	if sigs := msg.Signatures(); len(sigs) != 1 || sigs[0].ProtectedHeaders().Type() != typ {
		return nil, fmt.Errorf("not a token of type %s", typ)
	}
	return payload, nil
}
