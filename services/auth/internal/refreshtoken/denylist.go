package refreshtoken

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/authapi"
)

// Denylist remembers revoked access tokens until they expire: single tokens
// by jti, and every token of a refresh-token family by its sid. It answers
// introspection, and it is the revocation feed the resource services poll
// (Feed), so a revoked token stops working everywhere within one poll.
type Denylist struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

// skew covers the clock difference between auth and a resource service: an
// entry outlives the tokens it names by this much.
const skew = time.Minute

// NewDenylist returns a denylist for access tokens living ttl.
func NewDenylist(rdb redis.UniversalClient, ttl time.Duration) *Denylist {
	return &Denylist{rdb: rdb, ttl: ttl}
}

func jtiKey(jti string) string { return "auth:jti:{" + jti + "}" }
func sidKey(sid string) string { return "auth:sid:{" + sid + "}" }

// The feed: a sorted set of "j:<jti>:<exp>" and "s:<sid>:<exp>" members
// scored by a sequence number, so a poller asks for what came after the
// last number it saw. Both keys share a hash tag (Redis Cluster).
const (
	feedKey = "auth:{revoked}"
	seqKey  = "auth:{revoked}:seq"
	// FeedPage is the most entries one Feed call returns.
	FeedPage = 1000
	// feedPrune is the most expired entries one Add removes from the front.
	feedPrune = 200
)

var addFeed = redis.NewScript(`
local now = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[2]), ARGV[i])
end
for i = 1, ` + strconv.Itoa(feedPrune) + ` do
  local first = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #first == 0 then break end
  local exp = tonumber(string.match(first[1], ':(%d+)$'))
  if exp == nil or exp >= now then break end
  redis.call('ZREM', KEYS[1], first[1])
end
return 1
`)

// Add marks the access tokens with these jtis revoked.
func (d *Denylist) Add(ctx context.Context, jtis ...string) error {
	return d.add(ctx, jtiKey, "j:", jtis)
}

// RevokeSessions marks every access token carrying one of sids revoked.
func (d *Denylist) RevokeSessions(ctx context.Context, sids ...string) error {
	return d.add(ctx, sidKey, "s:", sids)
}

func (d *Denylist) add(ctx context.Context, key func(string) string, prefix string, ids []string) error {
	now := time.Now()
	exp := strconv.FormatInt(now.Add(d.ttl+skew).Unix(), 10)
	members := []any{now.Add(-skew).Unix()}
	_, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			if id != "" {
				p.Set(ctx, key(id), "1", d.ttl+skew)
				members = append(members, prefix+id+":"+exp)
			}
		}
		return nil
	})
	if err == nil && len(members) > 1 {
		err = addFeed.Run(ctx, d.rdb, []string{feedKey, seqKey}, members...).Err()
	}
	if err != nil {
		return fmt.Errorf("marking access tokens revoked: %w", err)
	}
	return nil
}

// Revoked reports whether the token with jti, or the family sid (may be
// empty), was revoked.
func (d *Denylist) Revoked(ctx context.Context, jti, sid string) (bool, error) {
	keys := []string{jtiKey(jti)}
	if sid != "" {
		keys = append(keys, sidKey(sid))
	}
	var n int64
	for _, k := range keys { // one key per call: the keys live in different cluster slots
		c, err := d.rdb.Exists(ctx, k).Result()
		if err != nil {
			return false, fmt.Errorf("reading access-token denylist: %w", err)
		}
		n += c
	}
	return n > 0, nil
}

var readFeed = redis.NewScript(`
local after = tonumber(ARGV[1])
local top = tonumber(redis.call('GET', KEYS[2]) or '0')
if after > top then after = 0 end
local r = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. after, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
table.insert(r, 1, tostring(top))
return r
`)

// Feed returns the live revocations numbered after `after` (at most
// FeedPage of them), the number to ask after next time, and whether the page
// was full (more may follow at once). A number above the newest one (the
// feed was lost with its Redis) starts from the beginning.
func (d *Denylist) Feed(ctx context.Context, after int64) (next int64, entries []authapi.Revocation, more bool, err error) {
	res, err := readFeed.Run(ctx, d.rdb, []string{feedKey, seqKey}, after, FeedPage).StringSlice()
	if err != nil {
		return 0, nil, false, fmt.Errorf("reading the revocation feed: %w", err)
	}
	next, _ = strconv.ParseInt(res[0], 10, 64)
	now := time.Now().Add(-skew).Unix()
	entries = []authapi.Revocation{}
	for i := 1; i+1 < len(res); i += 2 {
		seq, _ := strconv.ParseInt(res[i+1], 10, 64)
		next = seq
		kind, rest, _ := strings.Cut(res[i], ":")
		id, expRaw, _ := strings.Cut(rest, ":")
		exp, perr := strconv.ParseInt(expRaw, 10, 64)
		if perr != nil || exp < now {
			continue
		}
		switch kind {
		case "j":
			entries = append(entries, authapi.Revocation{JTI: id, Expiry: exp})
		case "s":
			entries = append(entries, authapi.Revocation{SID: id, Expiry: exp})
		}
	}
	return next, entries, (len(res)-1)/2 >= FeedPage, nil
}
