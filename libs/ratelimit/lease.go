package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"
)

const (
	// leaseTTL is how long leased tokens may wait unspent: a replica holds a
	// client's tokens back from the other replicas for at most this long.
	leaseTTL = 250 * time.Millisecond
	// idleAfter is how long a client's entry is kept after its last request.
	idleAfter = time.Minute
)

// client is one API client's state on this replica.
type client struct {
	mu sync.Mutex

	tokens     int       // leased tokens not spent yet
	leaseUntil time.Time // when they are dropped
	remaining  int       // Redis's remaining at its last answer, leases excluded
	resetAt    time.Time // when the quota is full again, per that answer

	deniedUntil time.Time // Redis refused: answer 429 locally until then
	asking      int       // tokens asked of Redis by calls in flight

	window    time.Time // start of the current one-second window
	cur, prev int       // requests in the current and previous windows
	lastSeen  time.Time
}

// decision is what the middleware answers.
type decision struct {
	allowed    bool
	remaining  int
	resetAfter time.Duration
	retryAfter time.Duration
}

// decide spends one of clientID's tokens: from its lease when it has one,
// else from Redis, leasing more when the client is busy on this replica. An
// error means Redis did not answer (the caller fails open).
func (l *Limiter) decide(ctx context.Context, clientID string) (decision, error) {
	now := l.now()
	l.sweep(now)
	e := l.client(clientID)

	e.mu.Lock()
	e.lastSeen = now
	rate := e.count(now)
	// Leased tokens come first, even if a concurrent miss has been refused
	// since they were granted: Redis granted them, so spending them cannot
	// exceed the limit.
	if e.tokens > 0 && now.Before(e.leaseUntil) {
		e.tokens--
		d := decision{allowed: true, remaining: e.remaining + e.tokens, resetAfter: e.resetAt.Sub(now)}
		e.mu.Unlock()
		l.local.Add(1)
		return d, nil
	}
	e.tokens = 0 // an expired lease is dropped, never carried over
	if now.Before(e.deniedUntil) {
		d := decision{retryAfter: e.deniedUntil.Sub(now), resetAfter: e.resetAt.Sub(now)}
		e.mu.Unlock()
		l.local.Add(1)
		return d, nil
	}
	// Misses while a lease is being fetched ask only for what it lacks, at
	// least their own token: the tokens a replica holds or is asking for
	// stay within one lease, and concurrent misses still make leases.
	n := max(l.leaseSize(rate)-e.asking, 1)
	e.asking += n
	e.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, redisBudget)
	// The hash tag keeps a client's key on one Redis Cluster slot.
	res, err := l.limiter.AllowAtMost(ctx, l.prefix+"{"+clientID+"}", l.limit, n)
	cancel()
	l.redisCalls.Add(1)
	now = l.now()

	e.mu.Lock()
	defer e.mu.Unlock()
	e.asking -= n
	if err != nil {
		return decision{}, err
	}
	e.remaining = res.Remaining
	e.resetAt = now.Add(res.ResetAfter)
	if res.Allowed == 0 {
		e.deniedUntil = now.Add(res.RetryAfter)
		return decision{retryAfter: res.RetryAfter, resetAfter: res.ResetAfter}, nil
	}
	switch {
	case res.Allowed == 1:
	case e.tokens > 0 && now.Before(e.leaseUntil):
		// Two calls were in flight: join their leases; the earlier expiry
		// keeps every token within leaseTTL.
		e.tokens += res.Allowed - 1
	default:
		e.tokens = res.Allowed - 1
		e.leaseUntil = now.Add(leaseTTL)
	}
	// The lease's unspent tokens are still this client's: count them.
	return decision{allowed: true, remaining: e.remaining + e.tokens, resetAfter: res.ResetAfter}, nil
}

// leaseSize is how many tokens to ask Redis for: what a client sending rate
// requests a second here would spend within leaseTTL. Rounding down keeps a
// client of a few requests a second at 1 (every request asks Redis), so no
// token it leases expires unspent.
func (l *Limiter) leaseSize(rate float64) int {
	n := int(math.Floor(rate * leaseTTL.Seconds()))
	return min(max(n, 1), l.maxLease)
}

// count records a request at now and returns the client's rate here: the
// requests of the last second, the previous window weighted by how much of
// it that second still covers.
func (e *client) count(now time.Time) float64 {
	switch since := now.Sub(e.window); {
	case since >= 2*time.Second || since < 0:
		e.window, e.prev, e.cur = now, 0, 0
	case since >= time.Second:
		e.window, e.prev, e.cur = e.window.Add(time.Second), e.cur, 0
	}
	e.cur++
	covered := 1 - float64(now.Sub(e.window))/float64(time.Second)
	return float64(e.prev)*covered + float64(e.cur)
}

func (l *Limiter) client(id string) *client {
	if e, ok := l.clients.Load(id); ok {
		return e.(*client)
	}
	e, _ := l.clients.LoadOrStore(id, &client{})
	return e.(*client)
}

// sweep drops, at most once a minute, the clients idle for over a minute, so
// memory follows the active clients. A request racing the sweep may update
// a dropped entry: it loses at most a lease or a denial, which is stricter
// or costs one more Redis call, never looser.
func (l *Limiter) sweep(now time.Time) {
	last := l.lastSweep.Load()
	if now.UnixNano()-last < int64(idleAfter) || !l.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	l.clients.Range(func(id, v any) bool {
		e := v.(*client)
		e.mu.Lock()
		idle := e.asking == 0 && now.Sub(e.lastSeen) > idleAfter
		e.mu.Unlock()
		if idle {
			l.clients.Delete(id)
		}
		return true
	})
}
