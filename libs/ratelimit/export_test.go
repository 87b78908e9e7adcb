package ratelimit

import (
	"context"
	"time"
)

// SetClock replaces l's clock (leases, refusals, idle entries); Redis keeps
// its own.
func SetClock(l *Limiter, now func() time.Time) { l.now = now }

// Clients is how many clients l holds state for.
func Clients(l *Limiter) int {
	n := 0
	l.clients.Range(func(any, any) bool { n++; return true })
	return n
}

// Decide is the middleware's decision without gin and the token check.
func Decide(ctx context.Context, l *Limiter, clientID string) (allowed bool, err error) {
	d, err := l.decide(ctx, clientID)
	return d.allowed, err
}
