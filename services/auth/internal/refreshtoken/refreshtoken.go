// Package refreshtoken keeps refresh-token families in Redis: each token
// rotates on use, atomically across replicas; presenting a rotated token
// (by the client it was issued to) revokes its whole family; a family ends
// after an idle and an absolute lifetime; revoking a family revokes the
// access tokens issued with it (Denylist).
package refreshtoken

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
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

// MaxRotated is how many rotated tokens of a family are remembered for
// reuse detection; an older one is just invalid.
const MaxRotated = 100

// Family is one authorization's chain of refresh tokens.
type Family struct {
	ID       string
	ClientID int64
	UserID   int64
	// Granted is the scope set the user consented to, narrowed when the
	// user or client lost a scope; a refresh may narrow, never widen.
	Granted scope.Set
	// Last is the scope set of the newest access token (used when a refresh omits scope).
	Last scope.Set
	// JTI of the newest access token.
	JTI string
	// AuthTime (Unix seconds) and SID are the ID token's auth_time and sid:
	// when the user authenticated for this authorization, and the browser
	// session's sid (OpenID Connect; empty for an authorization without it).
	AuthTime int64
	SID      string
}

// Errors.
var (
	ErrInvalid     = errors.New("refresh token unknown, expired or revoked")
	ErrReused      = errors.New("a rotated refresh token was presented; family revoked")
	ErrWrongClient = errors.New("refresh token of another client")
	ErrRevoked     = errors.New("family revoked before it was created")
)

// Lifetimes bound a family: it ends Idle after its last use, and Absolute
// after the authorization that started it, whichever comes first.
type Lifetimes struct {
	Idle, Absolute time.Duration
}

// Store keeps families.
type Store struct {
	rdb      redis.UniversalClient
	denylist *Denylist
	life     Lifetimes
}

// New returns a store over rdb whose family revocations also revoke the
// families' access tokens in denylist.
func New(rdb redis.UniversalClient, denylist *Denylist, life Lifetimes) *Store {
	return &Store{rdb: rdb, denylist: denylist, life: life}
}

// NewFamilyID returns a fresh family id.
func NewFamilyID() string { return randtoken.New(16) }

// SessionID is the `sid` claim of the access tokens of family id: it names
// the family to the resource services without revealing its id.
func SessionID(family string) string {
	sum := sha256.Sum256([]byte("eventreg sid|" + family))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

func famKey(id string) string     { return "auth:rt:{" + id + "}" }
func rotatedKey(id string) string { return "auth:rt:{" + id + "}:rotated" }
func indexKey(userID, clientID int64) string {
	return "auth:rtidx:{u" + strconv.FormatInt(userID, 10) + "}:" + strconv.FormatInt(clientID, 10)
}
func clientsKey(userID int64) string { return "auth:rtcl:{u" + strconv.FormatInt(userID, 10) + "}" }

// pendingKey indexes the families a user's outstanding codes will start: a
// sorted set of "<client>:<family>" scored by the code's end (Unix ms).
func pendingKey(userID int64) string { return "auth:rtpend:{u" + strconv.FormatInt(userID, 10) + "}" }

// newToken returns a token of family id: "<family>.<256 random bits>".
func newToken(id string) string { return id + "." + randtoken.New(32) }

// familyOf extracts the family id of a presented token.
func familyOf(token string) (string, bool) {
	id, rest, ok := strings.Cut(token, ".")
	return id, ok && len(id) == 22 && len(rest) == 43
}

// nowMS is Redis's clock in milliseconds, the one clock every replica shares.
const nowMS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

var create = redis.NewScript(nowMS + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'revoked' end
redis.call('HSET', KEYS[1], 'cur', ARGV[1], 'client', ARGV[2], 'user', ARGV[3], 'granted', ARGV[4], 'last', ARGV[5], 'jti', ARGV[6], 'revoked', '0', 'created', now, 'v', '2', 'auth_time', ARGV[9], 'sid', ARGV[10])
redis.call('PEXPIRE', KEYS[1], math.min(tonumber(ARGV[7]), tonumber(ARGV[8])))
return 'ok'
`)

// Create starts family f (its id chosen beforehand, see authcode) and
// returns its first token. When the family was revoked before it was created
// (the code was replayed while this redemption ran) it returns the token,
// which is dead, together with ErrRevoked.
func (s *Store) Create(ctx context.Context, f Family) (string, error) {
	tok := newToken(f.ID)
	res, err := create.Run(ctx, s.rdb, []string{famKey(f.ID)}, randtoken.Hash(tok), f.ClientID, f.UserID, f.Granted.String(),
		f.Last.String(), f.JTI, s.life.Idle.Milliseconds(), s.life.Absolute.Milliseconds(), f.AuthTime, f.SID).Text()
	if err != nil {
		return "", fmt.Errorf("creating refresh token: %w", err)
	}
	if res != "ok" {
		return tok, ErrRevoked
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, indexKey(f.UserID, f.ClientID), f.ID)
		p.PExpire(ctx, indexKey(f.UserID, f.ClientID), s.life.Absolute)
		p.SAdd(ctx, clientsKey(f.UserID), f.ClientID)
		p.PExpire(ctx, clientsKey(f.UserID), s.life.Absolute)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("indexing refresh token: %w", err)
	}
	return tok, nil
}

// Peek returns the family of token without changing anything (scope checks
// before a rotation; introspection). ErrInvalid when unknown, expired or
// revoked, or when token is not the family's current one.
func (s *Store) Peek(ctx context.Context, token string) (Family, error) {
	id, ok := familyOf(token)
	if !ok {
		return Family{}, ErrInvalid
	}
	f, err := s.read(ctx, id)
	if err != nil {
		return Family{}, err
	}
	if f.cur != randtoken.Hash(token) {
		return Family{}, ErrInvalid
	}
	return f.Family, nil
}

type stored struct {
	Family
	cur string
}

// read returns the live family id.
func (s *Store) read(ctx context.Context, id string) (stored, error) {
	v, err := s.rdb.HMGet(ctx, famKey(id), "cur", "client", "user", "granted", "last", "jti", "revoked", "auth_time", "sid").Result()
	if err != nil {
		return stored{}, fmt.Errorf("reading refresh token: %w", err)
	}
	str := func(i int) string { s, _ := v[i].(string); return s }
	if str(0) == "" || str(6) != "0" {
		return stored{}, ErrInvalid
	}
	client, _ := strconv.ParseInt(str(1), 10, 64)
	user, _ := strconv.ParseInt(str(2), 10, 64)
	authTime, _ := strconv.ParseInt(str(7), 10, 64)
	return stored{cur: str(0), Family: Family{ID: id, ClientID: client, UserID: user, Granted: scope.Parse(str(3)),
		Last: scope.Parse(str(4)), JTI: str(5), AuthTime: authTime, SID: str(8)}}, nil
}

// rotate checks the client binding before anything else, so that only the
// client a family belongs to can trigger its reuse detection.
var rotate = redis.NewScript(nowMS + `
local f, used = KEYS[1], KEYS[2]
if redis.call('EXISTS', f) == 0 then return {'invalid'} end
local h = redis.call('HMGET', f, 'revoked', 'cur', 'client', 'jti', 'created')
if h[1] == '1' then return {'invalid'} end
if h[3] ~= ARGV[3] then return {'wrong_client'} end
if h[2] ~= ARGV[1] then
  if redis.call('ZSCORE', used, ARGV[1]) then
    redis.call('HSET', f, 'revoked', '1')
    redis.call('PEXPIRE', f, ARGV[6])
    redis.call('PEXPIRE', used, ARGV[6])
    return {'reused', h[4]}
  end
  return {'invalid'}
end
local created = tonumber(h[5])
if created == nil then
  created = now
  redis.call('HSET', f, 'created', now)
end
local left = created + tonumber(ARGV[8]) - now
if left <= 0 then
  redis.call('DEL', f, used)
  return {'invalid'}
end
local ttl = math.min(tonumber(ARGV[7]), left)
local n = redis.call('HINCRBY', f, 'rotations', 1)
redis.call('ZADD', used, n, ARGV[1])
redis.call('ZREMRANGEBYRANK', used, 0, -(tonumber(ARGV[10]) + 1))
redis.call('HSET', f, 'cur', ARGV[2], 'last', ARGV[4], 'jti', ARGV[5], 'granted', ARGV[9])
redis.call('PEXPIRE', f, ttl)
redis.call('PEXPIRE', used, ttl)
return {'ok'}
`)

// Rotate replaces token with a new one of the same family, for clientID,
// recording the narrowed grant and the scopes and jti of the access token
// issued with it. Exactly one of several concurrent rotations of one token
// succeeds; the others present a rotated token, which revokes the family
// and its access tokens (ErrReused). Another client's token is
// ErrWrongClient and changes nothing.
func (s *Store) Rotate(ctx context.Context, token string, clientID int64, granted, scopes scope.Set, jti string) (string, error) {
	id, ok := familyOf(token)
	if !ok {
		return "", ErrInvalid
	}
	next := newToken(id)
	res, err := rotate.Run(ctx, s.rdb, []string{famKey(id), rotatedKey(id)}, randtoken.Hash(token), randtoken.Hash(next),
		strconv.FormatInt(clientID, 10), scopes.String(), jti, revokedMemory.Milliseconds(),
		s.life.Idle.Milliseconds(), s.life.Absolute.Milliseconds(), granted.String(), MaxRotated).StringSlice()
	if err != nil {
		return "", fmt.Errorf("rotating refresh token: %w", err)
	}
	switch res[0] {
	case "ok":
		return next, nil
	case "reused":
		if err := s.denylist.RevokeSessions(ctx, SessionID(id)); err != nil {
			return "", err
		}
		return "", ErrReused
	case "wrong_client":
		return "", ErrWrongClient
	default:
		return "", ErrInvalid
	}
}

var revoke = redis.NewScript(`
redis.call('HSET', KEYS[1], 'revoked', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`)

// RevokeFamily revokes family id (creating a tombstone when it does not
// exist yet) and every access token issued with it.
func (s *Store) RevokeFamily(ctx context.Context, id string) error {
	if err := revoke.Run(ctx, s.rdb, []string{famKey(id), rotatedKey(id)}, revokedMemory.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("revoking refresh token family: %w", err)
	}
	return s.denylist.RevokeSessions(ctx, SessionID(id))
}

// Reserve records that a code issued now for userID and clientID, living
// ttl, will start family id, so that revoking the user's (or the user and
// client's) authorizations before the code is redeemed revokes the family
// before it exists: the redemption is then refused (Withdrawn), or the
// family it creates is dead (Create answers ErrRevoked).
func (s *Store) Reserve(ctx context.Context, userID, clientID int64, id string, ttl time.Duration) error {
	k := pendingKey(userID)
	now := time.Now()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, k, "-inf", "("+strconv.FormatInt(now.UnixMilli(), 10))
		p.ZAdd(ctx, k, redis.Z{Score: float64(now.Add(ttl).UnixMilli()), Member: strconv.FormatInt(clientID, 10) + ":" + id})
		// Each code lives at most ttl; the slack covers a redemption in flight.
		p.PExpire(ctx, k, ttl+time.Minute)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reserving a refresh token family: %w", err)
	}
	return nil
}

// Withdrawn reports whether family id was revoked before it was created
// because its code's user or authorization was revoked meanwhile (not
// because the code was replayed: the first redemption of a replayed code
// still gets its, dead, tokens).
func (s *Store) Withdrawn(ctx context.Context, id string) (bool, error) {
	v, err := s.rdb.HGet(ctx, famKey(id), "withdrawn").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("reading refresh token family: %w", err)
	}
	return v == "1", nil
}

// tombstone revokes a family that does not exist yet; 'live' when it does.
var tombstone = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 'live' end
redis.call('HSET', KEYS[1], 'revoked', '1', 'withdrawn', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 'tombstoned'
`)

// revokePending revokes the families the outstanding codes of userID (with
// clientID, or with any client when clientID is 0) will start: every one
// not created yet, and those created meanwhile that match. It returns how
// many it revoked.
func (s *Store) revokePending(ctx context.Context, userID, clientID int64, match func(Family) bool) (int, error) {
	members, err := s.rdb.ZRangeByScore(ctx, pendingKey(userID), &redis.ZRangeBy{
		Min: strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil {
		return 0, fmt.Errorf("listing a user's outstanding codes: %w", err)
	}
	n := 0
	for _, m := range members {
		c, id, _ := strings.Cut(m, ":")
		if cid, err := strconv.ParseInt(c, 10, 64); err != nil || (clientID != 0 && cid != clientID) {
			continue
		}
		res, err := tombstone.Run(ctx, s.rdb, []string{famKey(id)}, revokedMemory.Milliseconds()).Text()
		if err != nil {
			return n, fmt.Errorf("revoking a reserved refresh token family: %w", err)
		}
		if res == "tombstoned" {
			// The access token of a redemption in flight carries its sid.
			if err := s.denylist.RevokeSessions(ctx, SessionID(id)); err != nil {
				return n, err
			}
			n++
			continue
		}
		// Created by now, maybe not indexed yet: judged here.
		f, err := s.read(ctx, id)
		if errors.Is(err, ErrInvalid) || (err == nil && !match(f.Family)) {
			continue
		}
		if err != nil {
			return n, err
		}
		if err := s.RevokeFamily(ctx, id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// FamilyOfToken returns the family id a token names (without checking it).
func FamilyOfToken(token string) (string, bool) { return familyOf(token) }

// RevokeUserClient revokes every family of userID with clientID, and their
// access tokens, and the families of the outstanding codes of both.
func (s *Store) RevokeUserClient(ctx context.Context, userID, clientID int64) error {
	all := func(Family) bool { return true }
	if _, err := s.revokeWhere(ctx, userID, clientID, all); err != nil {
		return err
	}
	_, err := s.revokePending(ctx, userID, clientID, all)
	return err
}

// RevokeUser revokes the families of userID (with any client) for which
// revoke answers true, and the families of every outstanding code of
// userID (a code is redeemed against the grant as it stood when issued),
// and returns how many it revoked.
func (s *Store) RevokeUser(ctx context.Context, userID int64, revoke func(Family) bool) (int, error) {
	n, err := s.revokePending(ctx, userID, 0, revoke)
	if err != nil {
		return n, err
	}
	clients, err := s.rdb.SMembers(ctx, clientsKey(userID)).Result()
	if err != nil {
		return n, fmt.Errorf("listing a user's refresh tokens: %w", err)
	}
	for _, c := range clients {
		clientID, err := strconv.ParseInt(c, 10, 64)
		if err != nil {
			continue
		}
		k, err := s.revokeWhere(ctx, userID, clientID, revoke)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// revokeWhere revokes the live families of userID and clientID that match,
// dropping from the index those that ended.
func (s *Store) revokeWhere(ctx context.Context, userID, clientID int64, match func(Family) bool) (int, error) {
	idx := indexKey(userID, clientID)
	ids, err := s.rdb.SMembers(ctx, idx).Result()
	if err != nil {
		return 0, fmt.Errorf("listing refresh tokens: %w", err)
	}
	n := 0
	for _, id := range ids {
		f, err := s.read(ctx, id)
		if errors.Is(err, ErrInvalid) {
			_ = s.rdb.SRem(ctx, idx, id).Err()
			continue
		}
		if err != nil {
			return n, err
		}
		if !match(f.Family) {
			continue
		}
		if err := s.RevokeFamily(ctx, id); err != nil {
			return n, err
		}
		n++
		if err := s.rdb.SRem(ctx, idx, id).Err(); err != nil {
			return n, fmt.Errorf("updating refresh-token index: %w", err)
		}
	}
	return n, nil
}
