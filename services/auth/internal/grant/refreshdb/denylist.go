package refreshdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
	"github.com/eventreg/eventreg/services/auth/internal/redisscript"
)

// Denylist remembers revoked access tokens until they expire: every token
// of a refresh-token family by its sid, and by cutoff (RevokeIssuedThrough)
// every token of a client, or of a family, issued at or before a second. It
// answers introspection, and it is the revocation feed the resource
// services poll (Feed), so a revoked token stops working everywhere within
// one poll. What it holds is bounded by the clients and the live families,
// never by the tokens revoked: a cutoff replaces the older one of its client
// or family.
type Denylist struct {
	rdb redis.UniversalClient
	ttl time.Duration
	// size is the feed's length at its last read or write (the metric).
	size atomic.Int64
}

// skew covers the clock difference between auth and a resource service: an
// entry outlives the tokens it names by this much.
const skew = time.Minute

// NewDenylist returns a denylist for access tokens living ttl.
func NewDenylist(rdb redis.UniversalClient, ttl time.Duration) *Denylist {
	return &Denylist{rdb: rdb, ttl: ttl}
}

var _ grant.Denylist = (*Denylist)(nil)

func jtiKey(jti string) string { return "auth:jti:{" + jti + "}" }
func sidKey(sid string) string { return "auth:sid:{" + sid + "}" }

// The feed: a sorted set of members scored by a sequence number, so a
// poller asks for what came after the last number it saw. A member is
// "s:<sid>:<exp>" (the family's tokens), "c:<client>:<through>:<exp>" or
// "f:<sid>:<through>:<exp>" (the client's or the family's tokens issued at
// or before the unix second through); "j:<jti>:<exp>" (one token) is still
// read, as written before cutoffs. The hash cutKey maps "c:<client>" and
// "f:<sid>" to their one current member; epochKey names the feed (feedLib).
// Every key shares a hash tag (Redis Cluster).
const (
	feedKey  = "auth:{revoked}"
	seqKey   = "auth:{revoked}:seq"
	cutKey   = "auth:{revoked}:cut"
	epochKey = "auth:{revoked}:epoch"
	// FeedPage is the most entries one Feed call returns.
	FeedPage = 1000
	// feedPrune is the most expired entries one write removes from the front.
	feedPrune = 200
)

// feedLib is what the feed's scripts share: the keys by name (every
// script is run on Denylist.keys), nextSeq and epoch. nextSeq numbers an
// entry: one more than the last, and never below Redis's clock in
// microseconds, so that after a failover to a replica that lost the last
// writes (the counter moved back) new entries are still numbered above every
// number pollers were given. epoch names the feed: made (from fresh, a
// random id) when the counter is, so a feed lost with its Redis comes back
// with another and pollers read it from the start. Numbers are strings: a
// Lua number prints with 14 digits only.
const feedLib = `
local feed, seq, cuts, epochKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local function epoch(fresh)
  if redis.call('EXISTS', epochKey) == 0 then
    redis.call('SET', epochKey, fresh)
  end
  return redis.call('GET', epochKey)
end
local function nextSeq(fresh)
  epoch(fresh)
  local n = redis.call('INCR', seq)
  local t = redis.call('TIME')
  local us = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
  if n < tonumber(us) then
    redis.call('SET', seq, us)
    return us
  end
  return string.format('%.0f', n)
end
`

// pruneFeed removes up to feedPrune expired members from the front of the
// feed (now is Unix seconds), and the cutoffs they were.
var pruneFeed = feedLib + `
local function prune(now)
  for i = 1, ` + strconv.Itoa(feedPrune) + ` do
    local first = redis.call('ZRANGE', feed, 0, 0)
    if #first == 0 then break end
    local exp = tonumber(string.match(first[1], ':(%d+)$'))
    if exp == nil or exp >= now then break end
    redis.call('ZREM', feed, first[1])
    local field = string.match(first[1], '^([cf]:[^:]+):')
    if field and redis.call('HGET', cuts, field) == first[1] then
      redis.call('HDEL', cuts, field)
    end
  end
end
`

// addArgs adds members to the feed, pruning what expired before now.
type addArgs struct {
	Now     int64    `lua:"now"`
	Epoch   string   `lua:"fresh_epoch"`
	Members []string `lua:"members"`
}

var addFeed = redisscript.New[addArgs](pruneFeed + `
for _, m in ipairs(members) do
  redis.call('ZADD', feed, nextSeq(fresh_epoch), m)
end
prune(tonumber(now))
return redis.call('ZCARD', feed)
`)

// cutArgs records the cutoff field ("c:<client>" or "f:<sid>") through the
// Unix second through, expiring at expiry.
type cutArgs struct {
	Now     int64  `lua:"now"`
	Epoch   string `lua:"fresh_epoch"`
	Field   string `lua:"field"`
	Through int64  `lua:"through"`
	Expiry  int64  `lua:"expiry"`
}

// addCut replaces an older cutoff of the same field; one at or past it
// makes it a no-op.
var addCut = redisscript.New[cutArgs](pruneFeed + `
local old = redis.call('HGET', cuts, field)
if old then
  local before = tonumber(string.match(old, ':(%d+):%d+$'))
  if before ~= nil and before >= tonumber(through) then
    prune(tonumber(now))
    return redis.call('ZCARD', feed)
  end
  redis.call('ZREM', feed, old)
end
local member = field .. ':' .. through .. ':' .. expiry
redis.call('ZADD', feed, nextSeq(fresh_epoch), member)
redis.call('HSET', cuts, field, member)
prune(tonumber(now))
return redis.call('ZCARD', feed)
`)

// RevokeSessions marks every access token carrying one of sids revoked.
func (d *Denylist) RevokeSessions(ctx context.Context, sids ...string) error {
	now := time.Now()
	exp := strconv.FormatInt(now.Add(d.ttl+skew).Unix(), 10)
	args := addArgs{Now: now.Add(-skew).Unix(), Epoch: randtoken.New(12)}
	_, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range sids {
			if id != "" {
				p.Set(ctx, sidKey(id), "1", d.ttl+skew)
				args.Members = append(args.Members, "s:"+id+":"+exp)
			}
		}
		return nil
	})
	if err == nil && len(args.Members) > 0 {
		var n int64
		n, err = addFeed.Run(ctx, d.rdb, d.keys(), args).Int64()
		d.size.Store(n)
	}
	if err != nil {
		return fmt.Errorf("marking access tokens revoked: %w", err)
	}
	return nil
}

// cutField is the field of a cutoff in the hash cutKey and the start of its
// member in the feed: "c:<client>" or "f:<sid>".
func cutField(who grant.Cutoff) string {
	if who.SID != "" {
		return "f:" + who.SID
	}
	return "c:" + strconv.FormatInt(who.ClientID, 10)
}

// RevokeIssuedThrough marks revoked the tokens of who issued (iat) at or
// before through: one entry per client or family, whatever the number of
// tokens, replacing an older cutoff of the same one.
func (d *Denylist) RevokeIssuedThrough(ctx context.Context, who grant.Cutoff, through time.Time) error {
	n, err := addCut.Run(ctx, d.rdb, d.keys(), cutArgs{Now: time.Now().Add(-skew).Unix(), Epoch: randtoken.New(12),
		Field: cutField(who), Through: through.Unix(), Expiry: through.Add(d.ttl + skew).Unix()}).Int64()
	if err != nil {
		return fmt.Errorf("marking access tokens revoked: %w", err)
	}
	d.size.Store(n)
	return nil
}

// ClientTokens revokes a client's tokens for client.Service: a cutoff at
// now plus grace (the longest a replica may still authenticate the client
// by its old record, CLIENT_CACHE_TTL, and a second).
type ClientTokens struct {
	Denylist *Denylist
	Grace    time.Duration
}

// RevokeClientTokens revokes every access token of client id issued so far
// or within the grace.
func (c ClientTokens) RevokeClientTokens(ctx context.Context, id int64) error {
	return c.Denylist.RevokeIssuedThrough(ctx, grant.Cutoff{ClientID: id}, time.Now().Add(c.Grace))
}

func (d *Denylist) keys() []string { return []string{feedKey, seqKey, cutKey, epochKey} }

// Revoked reports whether the access token of claims c was revoked: by its
// jti, its family, or a cutoff of its client or family.
func (d *Denylist) Revoked(ctx context.Context, c accesstoken.Claims) (bool, error) {
	clientID, _ := strconv.ParseInt(c.ClientID, 10, 64)
	keys := []string{jtiKey(c.ID)}
	fields := []string{cutField(grant.Cutoff{ClientID: clientID})}
	if c.SessionID != "" {
		keys = append(keys, sidKey(c.SessionID))
		fields = append(fields, cutField(grant.Cutoff{SID: c.SessionID}))
	}
	for _, k := range keys { // one key per call: the keys live in different cluster slots
		n, err := d.rdb.Exists(ctx, k).Result()
		if err != nil {
			return false, fmt.Errorf("reading access-token denylist: %w", err)
		}
		if n > 0 {
			return true, nil
		}
	}
	cuts, err := d.rdb.HMGet(ctx, cutKey, fields...).Result()
	if err != nil {
		return false, fmt.Errorf("reading access-token denylist: %w", err)
	}
	for _, cut := range cuts {
		member, _ := cut.(string)
		if _, through, _, ok := parseCut(member); ok && c.IssuedAt <= through {
			return true, nil
		}
	}
	return false, nil
}

// parseCut reads a cutoff member "c:<client>:<through>:<exp>" or
// "f:<sid>:<through>:<exp>".
func parseCut(member string) (id string, through, exp int64, ok bool) {
	parts := strings.Split(member, ":")
	if len(parts) != 4 {
		return "", 0, 0, false
	}
	through, err1 := strconv.ParseInt(parts[2], 10, 64)
	exp, err2 := strconv.ParseInt(parts[3], 10, 64)
	return parts[1], through, exp, err1 == nil && err2 == nil
}

// Size is the number of entries in the feed at its last read or write.
func (d *Denylist) Size() int64 { return d.size.Load() }

type readArgs struct {
	After string `lua:"after"`
	Page  int    `lua:"page"`
	Epoch string `lua:"fresh_epoch"`
}

// readFeed answers the newest number, the feed's size and epoch, then the
// page: members and their numbers, alternating.
var readFeed = redisscript.New[readArgs](feedLib + `
local top = redis.call('GET', seq) or '0'
if tonumber(after) > tonumber(top) then after = '0' end
local r = redis.call('ZRANGEBYSCORE', feed, '(' .. after, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(page))
table.insert(r, 1, epoch(fresh_epoch))
table.insert(r, 1, tostring(redis.call('ZCARD', feed)))
table.insert(r, 1, top)
return r
`)

// Feed returns one page of the feed: the live revocations numbered after
// `after` (at most FeedPage of them), the number to ask after next time,
// whether the page was full (more may follow at once) and the feed's epoch.
// A number above the newest one (the feed was lost with its Redis) starts
// from the beginning.
func (d *Denylist) Feed(ctx context.Context, after int64) (authapi.Revocations, error) {
	res, err := readFeed.Run(ctx, d.rdb, d.keys(), readArgs{After: strconv.FormatInt(after, 10), Page: FeedPage, Epoch: randtoken.New(12)}).StringSlice()
	if err != nil {
		return authapi.Revocations{}, fmt.Errorf("reading the revocation feed: %w", err)
	}
	top, size, epoch, entries := res[0], res[1], res[2], res[3:]
	page := authapi.Revocations{Epoch: epoch, Revoked: []authapi.Revocation{}}
	page.Next, _ = strconv.ParseInt(top, 10, 64)
	n, _ := strconv.ParseInt(size, 10, 64)
	d.size.Store(n)
	now := time.Now().Add(-skew).Unix()
	for i := 0; i+1 < len(entries); i += 2 {
		member, number := entries[i], entries[i+1]
		page.Next, _ = strconv.ParseInt(number, 10, 64)
		if e, ok := feedEntry(member); ok && e.Expiry >= now {
			page.Revoked = append(page.Revoked, e)
		}
	}
	page.More = len(entries)/2 >= FeedPage
	return page, nil
}

// feedEntry reads a member of the feed.
func feedEntry(member string) (authapi.Revocation, bool) {
	kind, rest, _ := strings.Cut(member, ":")
	switch kind {
	case "c", "f":
		id, through, exp, ok := parseCut(member)
		if !ok {
			return authapi.Revocation{}, false
		}
		e := authapi.Revocation{IssuedThrough: through, Expiry: exp}
		if kind == "c" {
			e.Client = id
		} else {
			e.Family = id
		}
		return e, true
	case "j", "s":
		id, expRaw, _ := strings.Cut(rest, ":")
		exp, err := strconv.ParseInt(expRaw, 10, 64)
		if err != nil {
			return authapi.Revocation{}, false
		}
		if kind == "j" {
			return authapi.Revocation{JTI: id, Expiry: exp}, true
		}
		return authapi.Revocation{SID: id, Expiry: exp}, true
	}
	return authapi.Revocation{}, false
}
