// Package authcode keeps authorization codes in Redis (only their SHA-256): single use, short-lived, bound to client, redirect URI, user, scopes and PKCE challenge.
package authcode

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// replayMemory is how long a redeemed code is remembered to detect replays.
const replayMemory = 10 * time.Minute

// Grant is what a code stands for.
type Grant struct {
	ClientID    int64
	RedirectURI string
	UserID      int64
	Scopes      scope.Set
	Challenge   string // S256 challenge, empty without PKCE
	// Family is the refresh-token family the redemption will create; a
	// replayed code revokes it.
	Family string
	// OpenID Connect: the request's nonce (echoed in the ID token), when
	// the user authenticated (Unix seconds, the ID token's auth_time) and
	// the browser session's sid.
	Nonce    string
	AuthTime int64
	SID      string
}

// Outcomes of Redeem.
var (
	ErrInvalid  = errors.New("code unknown, expired or not bound to this client and redirect URI")
	ErrReplayed = errors.New("code already redeemed")
)

// Store keeps codes.
type Store struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

// New returns a store whose codes live ttl.
func New(rdb redis.UniversalClient, ttl time.Duration) *Store { return &Store{rdb: rdb, ttl: ttl} }

// TTL is how long a code lives.
func (s *Store) TTL() time.Duration { return s.ttl }

func key(code string) string { return "auth:code:{" + randtoken.Hash(code) + "}" }

// Create stores g and returns a new code (256 bits).
func (s *Store) Create(ctx context.Context, g Grant) (string, error) {
	code := randtoken.New(32)
	k := key(code)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, "client", g.ClientID, "redirect", g.RedirectURI, "user", g.UserID,
			"scope", g.Scopes.String(), "challenge", g.Challenge, "family", g.Family, "used", "0",
			"nonce", g.Nonce, "auth_time", g.AuthTime, "sid", g.SID)
		p.PExpire(ctx, k, s.ttl)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("storing authorization code: %w", err)
	}
	return code, nil
}

// redeem checks the binding and marks the code used in one step. A code
// presented with the wrong client, redirect URI or PKCE verifier is not
// consumed; only the client a code was issued to can be told it is a replay
// (and so revoke what the code issued): another client's is just invalid.
var redeem = redis.NewScript(`
local k = KEYS[1]
if redis.call('EXISTS', k) == 0 then return {'invalid'} end
local f = redis.call('HMGET', k, 'used', 'client', 'redirect', 'user', 'scope', 'challenge', 'family', 'nonce', 'auth_time', 'sid')
if f[2] ~= ARGV[1] then return {'invalid'} end
if f[1] == '1' then return {'replayed', f[7]} end
if f[3] ~= ARGV[2] or f[6] ~= ARGV[4] then return {'invalid'} end
redis.call('HSET', k, 'used', '1')
redis.call('PEXPIRE', k, ARGV[3])
return {'ok', f[4], f[5], f[6], f[7], f[8] or '', f[9] or '0', f[10] or ''}
`)

// Redeem consumes code for clientID and redirectURI; challenge is the S256
// challenge computed from the presented code_verifier ("" when none was sent)
// and must equal the stored one. On ErrReplayed the returned grant carries the
// family to revoke.
func (s *Store) Redeem(ctx context.Context, code string, clientID int64, redirectURI, challenge string) (Grant, error) {
	res, err := redeem.Run(ctx, s.rdb, []string{key(code)}, strconv.FormatInt(clientID, 10), redirectURI, replayMemory.Milliseconds(), challenge).StringSlice()
	if err != nil {
		return Grant{}, fmt.Errorf("redeeming authorization code: %w", err)
	}
	switch res[0] {
	case "ok":
		user, _ := strconv.ParseInt(res[1], 10, 64)
		g := Grant{ClientID: clientID, RedirectURI: redirectURI, UserID: user, Scopes: scope.Parse(res[2]), Challenge: res[3], Family: res[4]}
		if len(res) == 8 { // a code stored by a release without OpenID Connect has none
			g.Nonce, g.SID = res[5], res[7]
			g.AuthTime, _ = strconv.ParseInt(res[6], 10, 64)
		}
		return g, nil
	case "replayed":
		return Grant{Family: res[1]}, ErrReplayed
	default:
		return Grant{}, ErrInvalid
	}
}
