// Package ratelimit throttles repeated failures (logins per account and per address, client authentication per client) with a GCRA limiter in Redis shared by every replica.
package ratelimit

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
	prefix  string
	limit   redis_rate.Limit

	mu      sync.Mutex
	blocked map[string]time.Time // local memory of keys found over the limit
	now     func() time.Time
}

// NewFailures returns a failure counter named prefix allowing allowed failures per window.
func NewFailures(rdb *redis.Client, prefix string, allowed int, window time.Duration) *Failures {
	return &Failures{limiter: redis_rate.NewLimiter(rdb), prefix: "auth:rl:" + prefix + ":",
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

// Check asks Redis, without counting, whether key may try again; it returns
// the time to wait when it may not.
func (f *Failures) Check(ctx context.Context, key string) (time.Duration, error) {
	res, err := f.limiter.AllowN(ctx, f.prefix+key, f.limit, 0)
	if err != nil {
		return 0, fmt.Errorf("reading rate limit: %w", err)
	}
	if res.Remaining >= 1 {
		return 0, nil
	}
	// The next failure is allowed once the oldest one in the burst has drained.
	interval := f.limit.Period / time.Duration(f.limit.Rate)
	wait := res.ResetAfter - time.Duration(f.limit.Burst-1)*interval
	if wait < time.Second {
		wait = time.Second
	}
	f.remember(key, wait)
	return wait, nil
}

// Fail counts one failure of key. It returns the wait when key is now over
// the limit, and how many failures remain otherwise.
func (f *Failures) Fail(ctx context.Context, key string) (wait time.Duration, remaining int, err error) {
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
