// Package accesstoken issues and reads RFC 9068 JWT access tokens.
package accesstoken

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Signer signs and verifies compact JWS (signing.Manager).
type Signer interface {
	Sign(payload []byte) (string, error)
	Verify(raw string) ([]byte, error)
}

// Claims are the claims of an access token.
type Claims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	IssuedAt int64  `json:"iat"`
	Expiry   int64  `json:"exp"`
	ID       string `json:"jti"`
	// SessionID names the refresh-token family of a token acting for a user
	// (RFC 9068 leaves room for it), so revoking the family revokes it.
	SessionID string `json:"sid,omitempty"`
}

// Issuer makes access tokens.
type Issuer struct {
	signer   Signer
	iss, aud string
	ttl      time.Duration
	now      func() time.Time
}

// NewIssuer returns an issuer of tokens for iss and aud living ttl.
func NewIssuer(signer Signer, iss, aud string, ttl time.Duration) *Issuer {
	return &Issuer{signer: signer, iss: iss, aud: aud, ttl: ttl, now: time.Now}
}

// TTL is the lifetime of issued tokens.
func (i *Issuer) TTL() time.Duration { return i.ttl }

// Issued is a signed token with its claims.
type Issued struct {
	Token  string
	Claims Claims
}

// UserSubject is the sub of a token acting for a user.
func UserSubject(userID int64) string { return strconv.FormatInt(userID, 10) }

// ClientSubject is the sub of a service token: it never collides with a user id.
func ClientSubject(clientID int64) string { return "client:" + strconv.FormatInt(clientID, 10) }

// Issue signs a token for sub and clientID carrying scopes; sid is the
// session (refresh-token family) of a token acting for a user, "" for a
// service token.
func (i *Issuer) Issue(sub string, clientID int64, scopes scope.Set, sid string) (Issued, error) {
	now := i.now()
	c := Claims{Issuer: i.iss, Subject: sub, Audience: i.aud, ClientID: strconv.FormatInt(clientID, 10),
		Scope: scopes.String(), IssuedAt: now.Unix(), Expiry: now.Add(i.ttl).Unix(), ID: randtoken.New(16), SessionID: sid}
	payload, err := json.Marshal(c)
	if err != nil {
		return Issued{}, fmt.Errorf("encoding claims: %w", err)
	}
	tok, err := i.signer.Sign(payload)
	if err != nil {
		return Issued{}, err
	}
	return Issued{Token: tok, Claims: c}, nil
}

// ErrInactive means the token is not one of ours, or expired.
var ErrInactive = errors.New("token inactive")

// ErrExpired is a token of ours past its exp; it is also ErrInactive.
var ErrExpired = fmt.Errorf("%w: expired", ErrInactive)

// Read verifies a token signed by this server and returns its claims when it
// is still valid.
func (i *Issuer) Read(raw string) (Claims, error) {
	c, err := i.ReadHint(raw)
	if err != nil {
		return Claims{}, err
	}
	if i.now().Unix() >= c.Expiry {
		return Claims{}, ErrExpired
	}
	return c, nil
}

// ReadHint verifies that raw is an access token this server signed (a key
// it still publishes, its issuer and audience) and returns its claims,
// expired or not: what names a user and an app, as a hint (the logout's
// access_token), never what grants access.
func (i *Issuer) ReadHint(raw string) (Claims, error) {
	payload, err := i.signer.Verify(raw)
	if err != nil {
		return Claims{}, ErrInactive
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Claims{}, ErrInactive
	}
	if c.Issuer != i.iss || c.Audience != i.aud {
		return Claims{}, ErrInactive
	}
	return c, nil
}
