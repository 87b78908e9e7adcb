// Package throttle throttles repeated failures (sign-in attempts, client authentication per client) with a GCRA limiter in Redis shared by every replica.
package throttle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Failures counts failures of one kind; a key may fail Allowed times per Window.
type Failures struct {
	limiter *redis_rate.Limiter
	rdb     redis.UniversalClient
	prefix  string
	limit   redis_rate.Limit

	mu      sync.Mutex
	blocked map[string]time.Time // local memory of keys found over the limit
	now     func() time.Time
}

// NewFailures returns a failure counter named prefix allowing allowed failures per window.
func NewFailures(rdb redis.UniversalClient, prefix string, allowed int, window time.Duration) *Failures {
	return &Failures{limiter: redis_rate.NewLimiter(rdb), rdb: rdb, prefix: "auth:rl:" + prefix + ":",
		limit: redis_rate.Limit{Rate: allowed, Burst: allowed, Period: window}, blocked: map[string]time.Time{}, now: time.Now}
}

// Blocked reports, from this replica's memory only (no Redis round trip),
// whether key went over the limit recently, and for how long still.
func (f *Failures) Blocked(key string) (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.blocked[key]
	if !ok {
		return 0, false
	}
	left := until.Sub(f.now())
	if left <= 0 {
		delete(f.blocked, key)
		return 0, false
	}
	return left, true
}

// Count counts one failure, or one attempt before it is made, of key,
// atomically in Redis: of any number of parallel attempts at most the
// allowance pass. It returns the wait when key is now over the limit, and
// how many remain otherwise. An attempt that turns out to succeed is given
// back with Refund.
func (f *Failures) Count(ctx context.Context, key string) (wait time.Duration, remaining int, err error) {
	res, err := f.limiter.Allow(ctx, f.prefix+key, f.limit)
	if err != nil {
		return 0, 0, fmt.Errorf("counting failure: %w", err)
	}
	if res.Allowed == 0 {
		wait = max(res.RetryAfter, time.Second)
		f.remember(key, wait)
		return wait, 0, nil
	}
	return 0, res.Remaining, nil
}

// refund gives back one counted attempt. redis_rate's AllowN with n = -1
// does not do this: it only writes a theoretical arrival time still in the
// future, so the refund of the one attempt of a key (which brings it back to
// now) is dropped. The key and time base are redis_rate's.
var refund = redis.NewScript(`
redis.replicate_commands()
local key = KEYS[1]
local interval = tonumber(ARGV[1])
local tat = redis.call("GET", key)
if not tat then
  return 0
end
local now = redis.call("TIME")
now = (now[1] - 1483228800) + (now[2] / 1000000)
tat = tonumber(tat) - interval
if tat <= now then
  redis.call("DEL", key)
else
  redis.call("SET", key, tat, "EX", math.ceil(tat - now))
end
return 1
`)

// Refund gives back one attempt of key counted by Count (the attempt
// succeeded, so it was no failure).
func (f *Failures) Refund(ctx context.Context, key string) error {
	interval := f.limit.Period.Seconds() / float64(f.limit.Rate)
	if err := refund.Run(ctx, f.rdb, []string{redisRatePrefix + f.prefix + key}, interval).Err(); err != nil {
		return fmt.Errorf("refunding an attempt: %w", err)
	}
	return nil
}

// redisRatePrefix is the prefix redis_rate puts before every key.
const redisRatePrefix = "rate:"

func (f *Failures) remember(key string, wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.blocked) > 100_000 {
		f.blocked = map[string]time.Time{}
	}
	f.blocked[key] = f.now().Add(wait)
}

// Limit returns the number of failures allowed per window.
func (f *Failures) Limit() int { return f.limit.Burst }
