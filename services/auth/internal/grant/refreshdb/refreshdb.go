// Package refreshdb keeps refresh-token families in Redis (grant.Families):
// each token rotates on use, atomically across replicas; presenting a
// rotated token (by the client it was issued to) revokes its whole family;
// a family ends after an idle and an absolute lifetime; revoking a family
// revokes the access tokens issued with it (Denylist, the revocation feed).
//
// A family is the hash auth:rt:{<id>} (fields cur, client, user, granted,
// last, jti, revoked, created, rotations, v, auth_time, sid; withdrawn on a
// tombstone) and the sorted set auth:rt:{<id>}:rotated of the digests of its
// rotated tokens. Replicas of the previous release read and write the same
// keys and fields during a rolling upgrade.
package refreshdb

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/redisscript"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// revokedMemory is how long a revoked family is remembered (to answer
// replays and to block a family created after a code replay).
const revokedMemory = 30 * 24 * time.Hour

// MaxRotated is how many rotated tokens of a family are remembered for
// reuse detection; an older one is just invalid.
const MaxRotated = 100

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

var _ grant.Families = (*Store)(nil)

// New returns a store over rdb whose family revocations also revoke the
// families' access tokens in denylist.
func New(rdb redis.UniversalClient, denylist *Denylist, life Lifetimes) *Store {
	return &Store{rdb: rdb, denylist: denylist, life: life}
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

// nowMS is Redis's clock in milliseconds, the one clock every replica shares.
const nowMS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// familyLib is what rotate and detectReuse share. judge says how a
// presented token (its digest) stands in its family: the client binding is
// checked before anything else, so that only the client a family belongs to
// can trigger its reuse detection. revoke ends a family, remembered ms.
const familyLib = `
local function judge(family, rotated, presented, client)
  if redis.call('EXISTS', family) == 0 then return 'invalid' end
  local f = fields(family, 'revoked', 'cur', 'client', 'created')
  if f.revoked == '1' then return 'invalid' end
  if f.client ~= client then return 'wrong_client' end
  if f.cur == presented then return 'current', f end
  if redis.call('ZSCORE', rotated, presented) then return 'rotated' end
  return 'invalid'
end
local function revoke(family, rotated, ms)
  redis.call('HSET', family, 'revoked', '1')
  redis.call('PEXPIRE', family, ms)
  redis.call('PEXPIRE', rotated, ms)
end
`

type createArgs struct {
	Cur        string `lua:"cur"`
	Client     int64  `lua:"client"`
	User       int64  `lua:"user"`
	Granted    string `lua:"granted"`
	Last       string `lua:"last"`
	JTI        string `lua:"jti"`
	IdleMS     int64  `lua:"idle_ms"`
	AbsoluteMS int64  `lua:"absolute_ms"`
	AuthTime   int64  `lua:"auth_time"`
	SID        string `lua:"sid"`
}

var create = redisscript.New[createArgs](nowMS + `
local family = KEYS[1]
if redis.call('EXISTS', family) == 1 then return 'revoked' end
redis.call('HSET', family, 'cur', cur, 'client', client, 'user', user, 'granted', granted, 'last', last, 'jti', jti,
  'revoked', '0', 'created', now, 'v', '2', 'auth_time', auth_time, 'sid', sid)
redis.call('PEXPIRE', family, math.min(tonumber(idle_ms), tonumber(absolute_ms)))
return 'ok'
`)

// Create starts family f (its id chosen beforehand, see Reserve) and
// returns its first token. When the family was revoked before it was created
// (the code was replayed while this redemption ran) it returns the token,
// which is dead, together with grant.ErrFamilyRevoked.
func (s *Store) Create(ctx context.Context, f grant.Family) (string, error) {
	tok := grant.NewRefreshToken(f.ID)
	res, err := create.Run(ctx, s.rdb, []string{famKey(f.ID)}, createArgs{
		Cur: randtoken.Hash(tok), Client: f.ClientID, User: f.UserID, Granted: f.Granted.String(), Last: f.Last.String(), JTI: f.JTI,
		IdleMS: s.life.Idle.Milliseconds(), AbsoluteMS: s.life.Absolute.Milliseconds(), AuthTime: f.AuthTime, SID: f.SID,
	}).Text()
	if err != nil {
		return "", fmt.Errorf("creating refresh token: %w", err)
	}
	if res != "ok" {
		return tok, grant.ErrFamilyRevoked
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
// before a rotation; introspection): grant.ErrRefreshInvalid when unknown,
// expired or revoked, or when token is not the family's current one.
func (s *Store) Peek(ctx context.Context, token string) (grant.Family, error) {
	id, ok := grant.FamilyOfToken(token)
	if !ok {
		return grant.Family{}, grant.ErrRefreshInvalid
	}
	f, err := s.read(ctx, id)
	if err != nil {
		return grant.Family{}, err
	}
	if f.Cur != randtoken.Hash(token) {
		return grant.Family{}, grant.ErrRefreshInvalid
	}
	return f.family(id), nil
}

// familyHash is the fields of a family's hash that make a grant.Family.
type familyHash struct {
	Cur      string `redis:"cur"`
	Client   int64  `redis:"client"`
	User     int64  `redis:"user"`
	Granted  string `redis:"granted"`
	Last     string `redis:"last"`
	JTI      string `redis:"jti"`
	Revoked  string `redis:"revoked"`
	AuthTime int64  `redis:"auth_time"`
	SID      string `redis:"sid"`
}

func (h familyHash) family(id string) grant.Family {
	return grant.Family{ID: id, ClientID: h.Client, UserID: h.User, Granted: scope.Parse(h.Granted), Last: scope.Parse(h.Last),
		JTI: h.JTI, AuthTime: h.AuthTime, SID: h.SID}
}

// hash reads the hash of family id; one that does not parse (not as a
// release writes a family) is grant.ErrRefreshInvalid.
func (s *Store) hash(ctx context.Context, id string) (familyHash, error) {
	vals, err := s.rdb.HGetAll(ctx, famKey(id)).Result()
	if err != nil {
		return familyHash{}, fmt.Errorf("reading refresh token family: %w", err)
	}
	var h familyHash
	if err := redis.NewMapStringStringResult(vals, nil).Scan(&h); err != nil {
		return familyHash{}, grant.ErrRefreshInvalid
	}
	return h, nil
}

// read returns the live family id: grant.ErrRefreshInvalid when it ended or
// was revoked.
func (s *Store) read(ctx context.Context, id string) (familyHash, error) {
	h, err := s.hash(ctx, id)
	if err == nil && (h.Cur == "" || h.Revoked != "0") {
		err = grant.ErrRefreshInvalid
	}
	return h, err
}

type rotateArgs struct {
	Presented  string `lua:"presented"`
	Next       string `lua:"next_cur"`
	Client     int64  `lua:"client"`
	Granted    string `lua:"granted"`
	Last       string `lua:"last"`
	JTI        string `lua:"jti"`
	RevokedMS  int64  `lua:"revoked_ms"`
	IdleMS     int64  `lua:"idle_ms"`
	AbsoluteMS int64  `lua:"absolute_ms"`
	MaxRotated int    `lua:"max_rotated"`
}

var rotate = redisscript.New[rotateArgs](nowMS + familyLib + `
local family, rotated = KEYS[1], KEYS[2]
local state, f = judge(family, rotated, presented, client)
if state == 'rotated' then
  revoke(family, rotated, revoked_ms)
  return 'reused'
end
if state ~= 'current' then return state end
local created = tonumber(f.created)
if created == nil then
  created = now
  redis.call('HSET', family, 'created', now)
end
local left = created + tonumber(absolute_ms) - now
if left <= 0 then
  redis.call('DEL', family, rotated)
  return 'invalid'
end
local ttl = math.min(tonumber(idle_ms), left)
local n = redis.call('HINCRBY', family, 'rotations', 1)
redis.call('ZADD', rotated, n, presented)
redis.call('ZREMRANGEBYRANK', rotated, 0, -(tonumber(max_rotated) + 1))
redis.call('HSET', family, 'cur', next_cur, 'last', last, 'jti', jti, 'granted', granted)
redis.call('PEXPIRE', family, ttl)
redis.call('PEXPIRE', rotated, ttl)
return 'ok'
`)

// Rotate replaces r.Token with a new token of the same family for
// r.ClientID, recording the narrowed grant and the scopes and jti of the
// access token issued with it. Exactly one of several concurrent rotations
// of one token succeeds; the others present a rotated token, which revokes
// the family and its access tokens (grant.ErrRefreshReused). Another
// client's token is grant.ErrWrongClient and changes nothing.
func (s *Store) Rotate(ctx context.Context, r grant.Rotation) (string, error) {
	id, ok := grant.FamilyOfToken(r.Token)
	if !ok {
		return "", grant.ErrRefreshInvalid
	}
	next := grant.NewRefreshToken(id)
	res, err := rotate.Run(ctx, s.rdb, []string{famKey(id), rotatedKey(id)}, rotateArgs{
		Presented: randtoken.Hash(r.Token), Next: randtoken.Hash(next), Client: r.ClientID, Granted: r.Granted.String(),
		Last: r.Last.String(), JTI: r.JTI, RevokedMS: revokedMemory.Milliseconds(),
		IdleMS: s.life.Idle.Milliseconds(), AbsoluteMS: s.life.Absolute.Milliseconds(), MaxRotated: MaxRotated,
	}).Text()
	if err != nil {
		return "", fmt.Errorf("rotating refresh token: %w", err)
	}
	switch res {
	case "ok":
		return next, nil
	case "reused":
		if err := s.denylist.RevokeSessions(ctx, grant.SessionID(id)); err != nil {
			return "", err
		}
		return "", grant.ErrRefreshReused
	case "wrong_client":
		return "", grant.ErrWrongClient
	default:
		return "", grant.ErrRefreshInvalid
	}
}

type reuseArgs struct {
	Presented string `lua:"presented"`
	Client    int64  `lua:"client"`
	RevokedMS int64  `lua:"revoked_ms"`
}

var detectReuse = redisscript.New[reuseArgs](familyLib + `
local family, rotated = KEYS[1], KEYS[2]
if judge(family, rotated, presented, client) ~= 'rotated' then return 0 end
revoke(family, rotated, revoked_ms)
return 1
`)

// DetectReuse reports whether token is a rotated token of a live family of
// clientID, and then revokes the family and its access tokens.
func (s *Store) DetectReuse(ctx context.Context, token string, clientID int64) (bool, error) {
	id, ok := grant.FamilyOfToken(token)
	if !ok {
		return false, nil
	}
	n, err := detectReuse.Run(ctx, s.rdb, []string{famKey(id), rotatedKey(id)}, reuseArgs{
		Presented: randtoken.Hash(token), Client: clientID, RevokedMS: revokedMemory.Milliseconds(),
	}).Int()
	if err != nil {
		return false, fmt.Errorf("checking a refresh token for reuse: %w", err)
	}
	if n == 0 {
		return false, nil
	}
	return true, s.denylist.RevokeSessions(ctx, grant.SessionID(id))
}

type revokeArgs struct {
	RevokedMS int64 `lua:"revoked_ms"`
}

var revokeFamily = redisscript.New[revokeArgs](familyLib + `
revoke(KEYS[1], KEYS[2], revoked_ms)
return 1
`)

// RevokeFamily revokes family id (creating a tombstone when it does not
// exist yet) and every access token issued with it.
func (s *Store) RevokeFamily(ctx context.Context, id string) error {
	if err := revokeFamily.Run(ctx, s.rdb, []string{famKey(id), rotatedKey(id)}, revokeArgs{RevokedMS: revokedMemory.Milliseconds()}).Err(); err != nil {
		return fmt.Errorf("revoking refresh token family: %w", err)
	}
	return s.denylist.RevokeSessions(ctx, grant.SessionID(id))
}
