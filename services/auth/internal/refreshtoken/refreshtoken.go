// Package refreshtoken keeps refresh-token families in Redis: each token rotates on use, atomically across replicas, and presenting a rotated token revokes its whole family.
package refreshtoken

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// revokedMemory is how long a revoked family is remembered (to answer
// replays and to block a family created after a code replay).
const revokedMemory = 30 * 24 * time.Hour

// Family is one authorization's chain of refresh tokens.
type Family struct {
	ID       string
	ClientID int64
	UserID   int64
	// Granted is the scope set the user consented to; a refresh may narrow, never widen.
	Granted scope.Set
	// Last is the scope set of the newest access token (used when a refresh omits scope).
	Last scope.Set
	// JTI of the newest access token, so revocation can mark it.
	JTI string
}

// Errors.
var (
	ErrInvalid     = errors.New("refresh token unknown or revoked")
	ErrReused      = errors.New("a rotated refresh token was presented; family revoked")
	ErrWrongClient = errors.New("refresh token of another client")
	ErrRevoked     = errors.New("family revoked before it was created")
)

// Store keeps families.
type Store struct{ rdb *redis.Client }

// New returns a store over rdb.
func New(rdb *redis.Client) *Store { return &Store{rdb: rdb} }

// NewFamilyID returns a fresh family id.
func NewFamilyID() string { return randtoken.New(16) }

func famKey(id string) string  { return "auth:rt:{" + id + "}" }
func usedKey(id string) string { return "auth:rt:{" + id + "}:used" }
func indexKey(userID, clientID int64) string {
	return "auth:rtidx:{u" + strconv.FormatInt(userID, 10) + "}:" + strconv.FormatInt(clientID, 10)
}

// newToken returns a token of family id: "<family>.<256 random bits>".
func newToken(id string) string { return id + "." + randtoken.New(32) }

// familyOf extracts the family id of a presented token.
func familyOf(token string) (string, bool) {
	id, rest, ok := strings.Cut(token, ".")
	return id, ok && len(id) == 22 && len(rest) == 43
}

var create = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 'revoked' end
redis.call('HSET', KEYS[1], 'cur', ARGV[1], 'client', ARGV[2], 'user', ARGV[3], 'granted', ARGV[4], 'last', ARGV[4], 'jti', ARGV[5], 'revoked', '0')
return 'ok'
`)

// Create starts family f (its id chosen beforehand, see authcode) and
// returns its first token. When the family was revoked before it was created
// (the code was replayed while this redemption ran) it returns the token,
// which is dead, together with ErrRevoked.
func (s *Store) Create(ctx context.Context, f Family) (string, error) {
	tok := newToken(f.ID)
	res, err := create.Run(ctx, s.rdb, []string{famKey(f.ID)}, randtoken.Hash(tok), f.ClientID, f.UserID, f.Granted.String(), f.JTI).Text()
	if err != nil {
		return "", fmt.Errorf("creating refresh token: %w", err)
	}
	if res != "ok" {
		return tok, ErrRevoked
	}
	if err := s.rdb.SAdd(ctx, indexKey(f.UserID, f.ClientID), f.ID).Err(); err != nil {
		return "", fmt.Errorf("indexing refresh token: %w", err)
	}
	return tok, nil
}

// Peek returns the family of token without changing anything (scope checks
// before a rotation; introspection). ErrInvalid when unknown or revoked, or
// when token is not the family's current one.
func (s *Store) Peek(ctx context.Context, token string) (Family, error) {
	id, ok := familyOf(token)
	if !ok {
		return Family{}, ErrInvalid
	}
	v, err := s.rdb.HMGet(ctx, famKey(id), "cur", "client", "user", "granted", "last", "jti", "revoked").Result()
	if err != nil {
		return Family{}, fmt.Errorf("reading refresh token: %w", err)
	}
	str := func(i int) string { s, _ := v[i].(string); return s }
	if str(0) == "" || str(6) != "0" || str(0) != randtoken.Hash(token) {
		return Family{}, ErrInvalid
	}
	client, _ := strconv.ParseInt(str(1), 10, 64)
	user, _ := strconv.ParseInt(str(2), 10, 64)
	return Family{ID: id, ClientID: client, UserID: user, Granted: scope.Parse(str(3)), Last: scope.Parse(str(4)), JTI: str(5)}, nil
}

var rotate = redis.NewScript(`
local f, used = KEYS[1], KEYS[2]
if redis.call('EXISTS', f) == 0 then return {'invalid'} end
local h = redis.call('HMGET', f, 'revoked', 'cur', 'client', 'jti')
if h[1] == '1' then return {'invalid'} end
if h[2] ~= ARGV[1] then
  if redis.call('SISMEMBER', used, ARGV[1]) == 1 then
    redis.call('HSET', f, 'revoked', '1')
    redis.call('PEXPIRE', f, ARGV[6])
    redis.call('PEXPIRE', used, ARGV[6])
    return {'reused', h[4]}
  end
  return {'invalid'}
end
if h[3] ~= ARGV[3] then return {'wrong_client'} end
redis.call('SADD', used, ARGV[1])
redis.call('HSET', f, 'cur', ARGV[2], 'last', ARGV[4], 'jti', ARGV[5])
return {'ok'}
`)

// Rotate replaces token with a new one of the same family, for clientID,
// recording the scopes and jti of the access token issued with it. Exactly
// one of several concurrent rotations of one token succeeds; the others see
// a rotated token, which revokes the family (ErrReused, with the family's
// last jti to mark).
func (s *Store) Rotate(ctx context.Context, token string, clientID int64, scopes scope.Set, jti string) (newTok string, revokedJTI string, err error) {
	id, ok := familyOf(token)
	if !ok {
		return "", "", ErrInvalid
	}
	next := newToken(id)
	res, err := rotate.Run(ctx, s.rdb, []string{famKey(id), usedKey(id)}, randtoken.Hash(token), randtoken.Hash(next),
		strconv.FormatInt(clientID, 10), scopes.String(), jti, revokedMemory.Milliseconds()).StringSlice()
	if err != nil {
		return "", "", fmt.Errorf("rotating refresh token: %w", err)
	}
	switch res[0] {
	case "ok":
		return next, "", nil
	case "reused":
		return "", res[1], ErrReused
	case "wrong_client":
		return "", "", ErrWrongClient
	default:
		return "", "", ErrInvalid
	}
}

var revoke = redis.NewScript(`
local j = redis.call('HGET', KEYS[1], 'jti')
redis.call('HSET', KEYS[1], 'revoked', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return j or ''
`)

// RevokeFamily revokes family id (creating a tombstone when it does not exist
// yet) and returns the jti of its newest access token.
func (s *Store) RevokeFamily(ctx context.Context, id string) (string, error) {
	j, err := revoke.Run(ctx, s.rdb, []string{famKey(id), usedKey(id)}, revokedMemory.Milliseconds()).Text()
	if err != nil {
		return "", fmt.Errorf("revoking refresh token family: %w", err)
	}
	return j, nil
}

// FamilyOfToken returns the family id a token names (without checking it).
func FamilyOfToken(token string) (string, bool) { return familyOf(token) }

// RevokeUserClient revokes every family of userID with clientID and returns their jtis.
func (s *Store) RevokeUserClient(ctx context.Context, userID, clientID int64) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, indexKey(userID, clientID)).Result()
	if err != nil {
		return nil, fmt.Errorf("listing refresh tokens: %w", err)
	}
	var jtis []string
	for _, id := range ids {
		j, err := s.RevokeFamily(ctx, id)
		if err != nil {
			return nil, err
		}
		if j != "" {
			jtis = append(jtis, j)
		}
	}
	if err := s.rdb.Del(ctx, indexKey(userID, clientID)).Err(); err != nil {
		return nil, fmt.Errorf("clearing refresh-token index: %w", err)
	}
	return jtis, nil
}

// Denylist remembers revoked access tokens (by jti) until they expire, for introspection.
type Denylist struct {
	rdb *redis.Client
	ttl time.Duration
}

// NewDenylist returns a denylist whose entries live ttl (the access-token lifetime).
func NewDenylist(rdb *redis.Client, ttl time.Duration) *Denylist {
	return &Denylist{rdb: rdb, ttl: ttl}
}

func jtiKey(jti string) string { return "auth:jti:{" + jti + "}" }

// Add marks jtis revoked.
func (d *Denylist) Add(ctx context.Context, jtis ...string) error {
	if len(jtis) == 0 {
		return nil
	}
	_, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, j := range jtis {
			if j != "" {
				p.Set(ctx, jtiKey(j), "1", d.ttl)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("marking access tokens revoked: %w", err)
	}
	return nil
}

// Revoked reports whether jti was revoked.
func (d *Denylist) Revoked(ctx context.Context, jti string) (bool, error) {
	n, err := d.rdb.Exists(ctx, jtiKey(jti)).Result()
	if err != nil {
		return false, fmt.Errorf("reading access-token denylist: %w", err)
	}
	return n == 1, nil
}
