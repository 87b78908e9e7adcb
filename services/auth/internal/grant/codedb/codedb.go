// Package codedb keeps authorization codes in Redis (grant.Codes), only
// their SHA-256: single use, short-lived, bound to client, redirect URI,
// user, scopes and PKCE challenge.
//
// A code is the hash auth:code:{<digest>} (fields client, redirect, user,
// scope, challenge, family, used, nonce, auth_time, sid).
package codedb

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/redisscript"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// replayMemory is how long a redeemed code is remembered to detect replays.
const replayMemory = 10 * time.Minute

// Store keeps codes.
type Store struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

var _ grant.Codes = (*Store)(nil)

// New returns a store whose codes live ttl.
func New(rdb redis.UniversalClient, ttl time.Duration) *Store { return &Store{rdb: rdb, ttl: ttl} }

// TTL is how long a code lives.
func (s *Store) TTL() time.Duration { return s.ttl }

func key(code string) string { return "auth:code:{" + randtoken.Hash(code) + "}" }

// codeHash is a code's hash, field by field.
type codeHash struct {
	Client    int64  `redis:"client"`
	Redirect  string `redis:"redirect"`
	User      int64  `redis:"user"`
	Scope     string `redis:"scope"`
	Challenge string `redis:"challenge"`
	Family    string `redis:"family"`
	Used      string `redis:"used"`
	Nonce     string `redis:"nonce"`
	AuthTime  int64  `redis:"auth_time"`
	SID       string `redis:"sid"`
}

// Create stores g and returns a new code (256 bits).
func (s *Store) Create(ctx context.Context, g grant.CodeGrant) (string, error) {
	code := randtoken.New(32)
	k := key(code)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, codeHash{Client: g.ClientID, Redirect: g.RedirectURI, User: g.UserID, Scope: g.Scopes.String(),
			Challenge: g.Challenge, Family: g.Family, Used: "0", Nonce: g.Nonce, AuthTime: g.AuthTime, SID: g.SID})
		p.PExpire(ctx, k, s.ttl)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("storing authorization code: %w", err)
	}
	return code, nil
}

type redeemArgs struct {
	Client    int64  `lua:"client"`
	Redirect  string `lua:"redirect"`
	Challenge string `lua:"challenge"`
	ReplayMS  int64  `lua:"replay_ms"`
}

// redeem checks the binding and marks the code used in one step, answering
// the status and the code's hash as it was (HGETALL's pairs). A code
// presented with the wrong client, redirect URI or PKCE verifier is not
// consumed; only the client a code was issued to can be told it is a replay
// (and so revoke what the code issued): another client's is just invalid.
var redeem = redisscript.New[redeemArgs](`
local code = KEYS[1]
if redis.call('EXISTS', code) == 0 then return {'invalid'} end
local f = fields(code, 'used', 'client', 'redirect', 'challenge')
if f.client ~= client then return {'invalid'} end
local status = 'ok'
if f.used == '1' then
  status = 'replayed'
elseif f.redirect ~= redirect or f.challenge ~= challenge then
  return {'invalid'}
end
local h = redis.call('HGETALL', code)
if status == 'ok' then
  redis.call('HSET', code, 'used', '1')
  redis.call('PEXPIRE', code, replay_ms)
end
table.insert(h, 1, status)
return h
`)

// Redeem consumes code for clientID and redirectURI; challenge is the S256
// challenge computed from the presented code_verifier ("" when none was
// sent) and must equal the stored one. On grant.ErrCodeReplayed the
// returned grant carries the family to revoke.
func (s *Store) Redeem(ctx context.Context, code string, clientID int64, redirectURI, challenge string) (grant.CodeGrant, error) {
	res, err := redeem.Run(ctx, s.rdb, []string{key(code)}, redeemArgs{Client: clientID, Redirect: redirectURI, Challenge: challenge,
		ReplayMS: replayMemory.Milliseconds()}).StringSlice()
	if err != nil {
		return grant.CodeGrant{}, fmt.Errorf("redeeming authorization code: %w", err)
	}
	status, pairs := res[0], res[1:]
	if status == "invalid" {
		return grant.CodeGrant{}, grant.ErrCodeInvalid
	}
	vals := make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		vals[pairs[i]] = pairs[i+1]
	}
	var h codeHash
	if err := redis.NewMapStringStringResult(vals, nil).Scan(&h); err != nil {
		return grant.CodeGrant{}, fmt.Errorf("reading authorization code: %w", err)
	}
	if status == "replayed" {
		return grant.CodeGrant{Family: h.Family}, grant.ErrCodeReplayed
	}
	// A code stored by a release without OpenID Connect has no nonce,
	// auth_time or sid: their zero values.
	return grant.CodeGrant{ClientID: clientID, RedirectURI: redirectURI, UserID: h.User, Scopes: scope.Parse(h.Scope),
		Challenge: h.Challenge, Family: h.Family, Nonce: h.Nonce, AuthTime: h.AuthTime, SID: h.SID}, nil
}
