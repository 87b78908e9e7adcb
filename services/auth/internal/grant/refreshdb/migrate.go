package refreshdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/redisscript"
)

// usedKey is where families from before the lifetimes kept their rotated
// tokens (a plain set, which rotate no longer reads).
func usedKey(id string) string { return "auth:rt:{" + id + "}:used" }

type upgradeArgs struct {
	RevokedMS  int64 `lua:"revoked_ms"`
	IdleMS     int64 `lua:"idle_ms"`
	AbsoluteMS int64 `lua:"absolute_ms"`
	MaxRotated int   `lua:"max_rotated"`
}

// upgrade gives a family from before the lifetimes what rotate expects: its
// rotated tokens moved from the old set to the sorted set reuse detection
// reads, a creation time (now: its absolute lifetime runs from the upgrade)
// and an expiry; a revoked one is kept as long as revocations are. It
// answers 'live' for a live family not known to be indexed (no v 2), else
// 'skip'.
var upgrade = redisscript.New[upgradeArgs](nowMS + `
local family, used, rotated = KEYS[1], KEYS[2], KEYS[3]
if redis.call('TYPE', family).ok ~= 'hash' then return 'skip' end
local f = fields(family, 'revoked', 'user', 'client', 'created', 'v')
if redis.call('EXISTS', used) == 1 then
  local n = tonumber(redis.call('HGET', family, 'rotations') or '0')
  for _, m in ipairs(redis.call('SMEMBERS', used)) do
    n = n + 1
    redis.call('ZADD', rotated, n, m)
  end
  redis.call('HSET', family, 'rotations', n)
  redis.call('ZREMRANGEBYRANK', rotated, 0, -(tonumber(max_rotated) + 1))
  redis.call('DEL', used)
end
if redis.call('PTTL', family) == -1 then
  if f.revoked == '1' then
    redis.call('PEXPIRE', family, revoked_ms)
  else
    if not f.created then redis.call('HSET', family, 'created', now) end
    redis.call('PEXPIRE', family, math.min(tonumber(idle_ms), tonumber(absolute_ms)))
  end
end
if redis.call('EXISTS', rotated) == 1 then
  redis.call('PEXPIRE', rotated, redis.call('PTTL', family))
end
if f.revoked == '1' or not f.user or not f.client or f.v == '2' then return 'skip' end
return 'live'
`)

// markIndexed records that a family is in the indexes (v 2, as Create
// writes it), unless it ended meanwhile.
var markIndexed = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'v', '2') end
return 1
`)

type indexArgs struct {
	Family     string `lua:"family"`
	Client     int64  `lua:"client"`
	AbsoluteMS int64  `lua:"absolute_ms"`
}

// index adds a family to its user's indexes and gives the indexes the
// absolute lifetime when they have a shorter one or none.
var index = redisscript.New[indexArgs](`
local families, clients = KEYS[1], KEYS[2]
redis.call('SADD', families, family)
redis.call('SADD', clients, client)
for _, k in ipairs({families, clients}) do
  local t = redis.call('PTTL', k)
  if t == -1 or t < tonumber(absolute_ms) then redis.call('PEXPIRE', k, absolute_ms) end
end
return 1
`)

// MigrateOld upgrades the families stored before families had lifetimes
// (no expiry, no creation time, rotated tokens in a plain set, not in the
// user's index of clients): each gets its lifetimes (counted from now),
// reuse detection, and its place in the indexes RevokeUser reads. Old index
// keys without an expiry get one. It is idempotent and safe while other
// replicas serve; it returns how many live families it indexed.
func (s *Store) MigrateOld(ctx context.Context) (int, error) {
	n := 0
	err := scanKeys(ctx, s.rdb, "auth:rt:{*}", func(key string) error {
		id := strings.TrimSuffix(strings.TrimPrefix(key, "auth:rt:{"), "}")
		res, err := upgrade.Run(ctx, s.rdb, []string{famKey(id), usedKey(id), rotatedKey(id)}, upgradeArgs{
			RevokedMS: revokedMemory.Milliseconds(), IdleMS: s.life.Idle.Milliseconds(), AbsoluteMS: s.life.Absolute.Milliseconds(), MaxRotated: MaxRotated,
		}).Text()
		if err != nil {
			return fmt.Errorf("upgrading refresh token family: %w", err)
		}
		if res != "live" {
			return nil
		}
		h, err := s.hash(ctx, id)
		if errors.Is(err, grant.ErrRefreshInvalid) {
			return nil // not a family as any release wrote one: left alone
		}
		if err != nil {
			return err
		}
		err = index.Run(ctx, s.rdb, []string{indexKey(h.User, h.Client), clientsKey(h.User)}, indexArgs{
			Family: id, Client: h.Client, AbsoluteMS: s.life.Absolute.Milliseconds(),
		}).Err()
		if err != nil {
			return fmt.Errorf("indexing refresh token family: %w", err)
		}
		if err := markIndexed.Run(ctx, s.rdb, []string{famKey(id)}).Err(); err != nil {
			return fmt.Errorf("indexing refresh token family: %w", err)
		}
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	// Index keys of the first release, whose families all ended, never expired.
	var batch []string
	expire := func() error {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.Do(ctx, "PEXPIRE", k, s.life.Absolute.Milliseconds(), "NX")
			}
			return nil
		})
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("giving refresh token indexes their lifetime: %w", err)
		}
		return nil
	}
	err = scanKeys(ctx, s.rdb, "auth:rtidx:{*", func(key string) error {
		if batch = append(batch, key); len(batch) < 1000 {
			return nil
		}
		return expire()
	})
	if err == nil && len(batch) > 0 {
		err = expire()
	}
	return n, err
}

// scanKeys calls fn for every key matching pattern, on every master of a
// Redis Cluster.
func scanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string, fn func(string) error) error {
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if err := fn(iter.Val()); err != nil {
				return err
			}
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("scanning %s: %w", pattern, err)
		}
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return scan(ctx, rdb)
}
