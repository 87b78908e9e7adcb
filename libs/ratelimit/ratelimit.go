// Package ratelimit limits the request rate of each API client of a resource
// service with a GCRA limiter in Redis shared by every replica; it fails open
// (serves) when Redis cannot answer quickly.
package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/tokenauth"
)

// DefaultLimit is the rate each client (OAuth client id) gets: 100 requests a
// second with bursts of 100, far above what a well-behaved integration paging
// through a search needs.
var DefaultLimit = redis_rate.PerSecond(100)

// redisBudget bounds the limiter's Redis round trip: past it the request is
// served unlimited rather than delayed.
const redisBudget = 200 * time.Millisecond

// Limiter counts requests per client.
type Limiter struct {
	limiter *redis_rate.Limiter
	limit   redis_rate.Limit
	prefix  string
	log     *slog.Logger
	lastLog atomic.Int64 // unix nanos of the last "failing open" log line
}

// New returns a limiter for service (a key prefix) allowing limit per client.
func New(rdb *redis.Client, service string, limit redis_rate.Limit, log *slog.Logger) *Limiter {
	return &Limiter{limiter: redis_rate.NewLimiter(rdb), limit: limit, prefix: service + ":rl:", log: log}
}

// Middleware answers 429 with Retry-After to a client over its limit. It must
// follow tokenauth's middleware: the key is the token's client id. A request
// is served when Redis fails or is slow (fail open), logged at most once a
// minute.
func (l *Limiter) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		claims := tokenauth.FromContext(c)
		if claims == nil || claims.ClientID == "" {
			c.Next()
			return
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), redisBudget)
		// The hash tag keeps a client's key on one Redis Cluster slot.
		res, err := l.limiter.Allow(ctx, l.prefix+"{"+claims.ClientID+"}", l.limit)
		cancel()
		if err != nil {
			l.failOpen(c, err)
			c.Next()
			return
		}
		if res.Allowed == 0 {
			apierror.Abort(c, apierror.RateLimited(res.RetryAfter))
			return
		}
		c.Next()
	}
}

func (l *Limiter) failOpen(c *gin.Context, err error) {
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(time.Minute) || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	l.log.WarnContext(c.Request.Context(), "rate limiting is off: redis cannot answer", "err", err.Error())
}
