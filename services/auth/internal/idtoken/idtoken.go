// Package idtoken issues OpenID Connect ID tokens (OpenID Connect Core 1.0
// §2): signed with the client's algorithm, RS256 or ES256, by the keys of
// package signing.
package idtoken

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Signer signs ID tokens and verifies those it signed (signing.Manager).
type Signer interface {
	SignIDToken(alg string, payload []byte) (string, error)
	VerifyIDToken(raw string) ([]byte, error)
}

// ErrBadHint is an id_token_hint this server did not issue.
var ErrBadHint = errors.New("the id_token_hint is not an ID token of this server")

// ReadHint returns the claims of an ID token this server issued, sent back
// as an id_token_hint (Core §3.1.2.1): the signature and issuer are
// checked, its expiry is not (an expired ID token is a valid hint).
func (i *Issuer) ReadHint(raw string) (Claims, error) {
	payload, err := i.signer.VerifyIDToken(raw)
	if err != nil {
		return Claims{}, ErrBadHint
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil || c.Issuer != i.iss || c.Subject == "" {
		return Claims{}, ErrBadHint
	}
	return c, nil
}

// Claims are the claims of an ID token. The claims of the profile, email,
// phone and address scopes are UserInfo's, not the ID token's (Core §5.4:
// the code flow returns them there).
type Claims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	Expiry   int64  `json:"exp"`
	IssuedAt int64  `json:"iat"`
	// AuthTime is when the user authenticated (always sent: max_age and
	// relying parties that check it need it).
	AuthTime int64 `json:"auth_time,omitempty"`
	// Nonce is the authentication request's, exactly; absent when it sent
	// none and on a refresh (Core §12.2).
	Nonce string `json:"nonce,omitempty"`
	// AtHash binds the access token issued with it (Core §3.1.3.6).
	AtHash string `json:"at_hash,omitempty"`
	// SID names the browser session (the OP session of Front-Channel
	// Logout §3): the id_token_hint of a logout is matched to it.
	SID string `json:"sid,omitempty"`
}

// ClaimsSupported are the claims of ID tokens and, after them, UserInfo's
// (the users service, by scope): claims_supported of the discovery document.
var ClaimsSupported = []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "sid",
	"name", "given_name", "family_name", "preferred_username", "nickname", "picture", "birthdate", "updated_at",
	"email", "email_verified", "phone_number", "phone_number_verified", "address"}

// Issuer makes ID tokens.
type Issuer struct {
	signer Signer
	iss    string
	ttl    time.Duration
	now    func() time.Time
}

// NewIssuer returns an issuer of ID tokens for iss living ttl.
func NewIssuer(signer Signer, iss string, ttl time.Duration) *Issuer {
	return &Issuer{signer: signer, iss: iss, ttl: ttl, now: time.Now}
}

// Request is what an ID token says beyond the issuer and its times.
type Request struct {
	// Alg is the client's algorithm, RS256 or ES256.
	Alg      string
	Subject  string
	ClientID string
	AuthTime int64
	Nonce    string
	// AccessToken is the access token issued with it ("" for none).
	AccessToken string
	SID         string
}

// Issue signs an ID token for r.
func (i *Issuer) Issue(r Request) (string, Claims, error) {
	now := i.now()
	c := Claims{Issuer: i.iss, Subject: r.Subject, Audience: r.ClientID, IssuedAt: now.Unix(), Expiry: now.Add(i.ttl).Unix(),
		AuthTime: r.AuthTime, Nonce: r.Nonce, SID: r.SID}
	if r.AccessToken != "" {
		c.AtHash = AtHash(r.AccessToken)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", Claims{}, fmt.Errorf("encoding ID token claims: %w", err)
	}
	tok, err := i.signer.SignIDToken(r.Alg, payload)
	if err != nil {
		return "", Claims{}, fmt.Errorf("signing an ID token: %w", err)
	}
	return tok, c, nil
}

// AtHash is the at_hash of accessToken: the base64url left half of its
// SHA-256, the hash of both RS256 and ES256.
func AtHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}
