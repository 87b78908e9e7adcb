package refreshtoken

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
	"github.com/eventreg/eventreg/services/auth/internal/randtoken"
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

// feedLib is what the feed's scripts share. nextSeq numbers an entry: one
// more than the last, and never below Redis's clock in microseconds, so that
// after a failover to a replica that lost the last writes (the counter moved
// back) new entries are still numbered above every number pollers were
// given. epoch names the feed: made (from ARGV[#ARGV], a random id) when the
// counter is, so a feed lost with its Redis comes back with another and
// pollers read it from the start. Numbers are strings: a Lua number prints
// with 14 digits only.
var feedLib = `
local function epoch()
  if redis.call('EXISTS', KEYS[4]) == 0 then
    redis.call('SET', KEYS[4], ARGV[#ARGV])
  end
  return redis.call('GET', KEYS[4])
end
local function nextSeq()
  epoch()
  local n = redis.call('INCR', KEYS[2])
  local t = redis.call('TIME')
  local us = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
  if n < tonumber(us) then
    redis.call('SET', KEYS[2], us)
    return us
  end
  return string.format('%.0f', n)
end
`

// pruneFeed removes up to feedPrune expired members from the front of the
// feed (ARGV[1] is now), and the cutoffs they were.
var pruneFeed = feedLib + `
local function prune(now)
  for i = 1, ` + strconv.Itoa(feedPrune) + ` do
    local first = redis.call('ZRANGE', KEYS[1], 0, 0)
    if #first == 0 then break end
    local exp = tonumber(string.match(first[1], ':(%d+)$'))
    if exp == nil or exp >= now then break end
    redis.call('ZREM', KEYS[1], first[1])
    local field = string.match(first[1], '^([cf]:[^:]+):')
    if field and redis.call('HGET', KEYS[3], field) == first[1] then
      redis.call('HDEL', KEYS[3], field)
    end
  end
end
`

var addFeed = redis.NewScript(pruneFeed + `
for i = 2, #ARGV - 1 do
  redis.call('ZADD', KEYS[1], nextSeq(), ARGV[i])
end
prune(tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])
`)

// addCut records the cutoff ARGV[2] ("c:<client>" or "f:<sid>") through
// ARGV[3] expiring at ARGV[4] (ARGV[1] is now, ARGV[5] an epoch), replacing
// an older one of the same field; one at or past it makes it a no-op.
var addCut = redis.NewScript(pruneFeed + `
local old = redis.call('HGET', KEYS[3], ARGV[2])
if old then
  local through = tonumber(string.match(old, ':(%d+):%d+$'))
  if through ~= nil and through >= tonumber(ARGV[3]) then
    prune(tonumber(ARGV[1]))
    return redis.call('ZCARD', KEYS[1])
  end
  redis.call('ZREM', KEYS[1], old)
end
local member = ARGV[2] .. ':' .. ARGV[3] .. ':' .. ARGV[4]
redis.call('ZADD', KEYS[1], nextSeq(), member)
redis.call('HSET', KEYS[3], ARGV[2], member)
prune(tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])
`)

// RevokeSessions marks every access token carrying one of sids revoked.
func (d *Denylist) RevokeSessions(ctx context.Context, sids ...string) error {
	now := time.Now()
	exp := strconv.FormatInt(now.Add(d.ttl+skew).Unix(), 10)
	members := []any{now.Add(-skew).Unix()}
	_, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range sids {
			if id != "" {
				p.Set(ctx, sidKey(id), "1", d.ttl+skew)
				members = append(members, "s:"+id+":"+exp)
			}
		}
		return nil
	})
	if err == nil && len(members) > 1 {
		var n int64
		n, err = addFeed.Run(ctx, d.rdb, d.keys(), append(members, randtoken.New(12))...).Int64()
		d.size.Store(n)
	}
	if err != nil {
		return fmt.Errorf("marking access tokens revoked: %w", err)
	}
	return nil
}

// Cutoff names whose tokens a cutoff revokes: a client's (ClientCutoff) or a
// family's (FamilyCutoff).
type Cutoff string

// ClientCutoff is every token of client id.
func ClientCutoff(id int64) Cutoff { return Cutoff("c:" + strconv.FormatInt(id, 10)) }

// FamilyCutoff is every token carrying sid.
func FamilyCutoff(sid string) Cutoff { return Cutoff("f:" + sid) }

// RevokeIssuedThrough marks revoked the tokens of who issued (iat) at or
// before through: one entry per client or family, whatever the number of
// tokens, replacing an older cutoff of the same one.
func (d *Denylist) RevokeIssuedThrough(ctx context.Context, who Cutoff, through time.Time) error {
	now := time.Now()
	exp := through.Add(d.ttl + skew).Unix()
	n, err := addCut.Run(ctx, d.rdb, d.keys(), now.Add(-skew).Unix(), string(who), through.Unix(), exp, randtoken.New(12)).Int64()
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
	return c.Denylist.RevokeIssuedThrough(ctx, ClientCutoff(id), time.Now().Add(c.Grace))
}

func (d *Denylist) keys() []string { return []string{feedKey, seqKey, cutKey, epochKey} }

// Token is what Revoked needs of an access token.
type Token struct {
	ID, SessionID string
	ClientID      int64
	IssuedAt      int64
}

// TokenOf is what the denylist needs of an access token's claims.
func TokenOf(c accesstoken.Claims) Token {
	id, _ := strconv.ParseInt(c.ClientID, 10, 64)
	return Token{ID: c.ID, SessionID: c.SessionID, ClientID: id, IssuedAt: c.IssuedAt}
}

// Revoked reports whether the token was revoked: by its jti, its family, or
// a cutoff of its client or family.
func (d *Denylist) Revoked(ctx context.Context, t Token) (bool, error) {
	keys := []string{jtiKey(t.ID)}
	fields := []string{string(ClientCutoff(t.ClientID))}
	if t.SessionID != "" {
		keys = append(keys, sidKey(t.SessionID))
		fields = append(fields, string(FamilyCutoff(t.SessionID)))
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
	for _, c := range cuts {
		member, _ := c.(string)
		if _, through, _, ok := parseCut(member); ok && t.IssuedAt <= through {
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

var readFeed = redis.NewScript(feedLib + `
local after = ARGV[1]
local top = redis.call('GET', KEYS[2]) or '0'
if tonumber(after) > tonumber(top) then after = '0' end
local r = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. after, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
table.insert(r, 1, epoch())
table.insert(r, 1, tostring(redis.call('ZCARD', KEYS[1])))
table.insert(r, 1, top)
return r
`)

// Feed returns one page of the feed: the live revocations numbered after
// `after` (at most FeedPage of them), the number to ask after next time,
// whether the page was full (more may follow at once) and the feed's epoch.
// A number above the newest one (the feed was lost with its Redis) starts
// from the beginning.
func (d *Denylist) Feed(ctx context.Context, after int64) (authapi.Revocations, error) {
	res, err := readFeed.Run(ctx, d.rdb, d.keys(), strconv.FormatInt(after, 10), FeedPage, randtoken.New(12)).StringSlice()
	if err != nil {
		return authapi.Revocations{}, fmt.Errorf("reading the revocation feed: %w", err)
	}
	page := authapi.Revocations{Epoch: res[2], Revoked: []authapi.Revocation{}}
	page.Next, _ = strconv.ParseInt(res[0], 10, 64)
	size, _ := strconv.ParseInt(res[1], 10, 64)
	d.size.Store(size)
	now := time.Now().Add(-skew).Unix()
	for i := 3; i+1 < len(res); i += 2 {
		page.Next, _ = strconv.ParseInt(res[i+1], 10, 64)
		if e, ok := feedEntry(res[i]); ok && e.Expiry >= now {
			page.Revoked = append(page.Revoked, e)
		}
	}
	page.More = (len(res)-3)/2 >= FeedPage
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
