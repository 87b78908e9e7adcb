// Package ratelimit limits the request rate of each API client of a resource
// service with a GCRA limiter in Redis shared by every replica, taking tokens
// from it in small leases spent locally; it fails open (serves) when Redis
// cannot answer quickly.
package ratelimit

import (
	"errors"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/logging"
	"github.com/eventreg/eventreg/libs/tokenauth"
)

// DefaultLimit is the rate each client (OAuth client id) gets: 100 requests a
// second with bursts of 100, far above what a well-behaved integration paging
// through a search needs.
var DefaultLimit = redis_rate.PerSecond(100)

// Config is the per-client limit of a resource service's public API, read
// from the environment (embedded in service.Resource).
type Config struct {
	// PerSecond is the sustained rate each client gets; 0 turns limiting off.
	PerSecond int `env:"RATE_LIMIT_PER_SECOND" envDefault:"100"`
	// Burst is how many requests a client may send at once; 0 means PerSecond.
	Burst int `env:"RATE_LIMIT_BURST" envDefault:"0"`
}

// Validate rejects negative values.
func (c Config) Validate() error {
	var errs []error
	if c.PerSecond < 0 {
		errs = append(errs, errors.New("RATE_LIMIT_PER_SECOND must be 0 (off) or more"))
	}
	if c.Burst < 0 {
		errs = append(errs, errors.New("RATE_LIMIT_BURST must be 0 (same as the rate) or more"))
	}
	return errors.Join(errs...)
}

// Limit is the configured limit.
func (c Config) Limit() redis_rate.Limit {
	burst := c.Burst
	if burst == 0 {
		burst = c.PerSecond
	}
	return redis_rate.Limit{Rate: c.PerSecond, Burst: burst, Period: time.Second}
}

// Limiter returns the limiter for service, or nil when limiting is off (no
// Redis, or PerSecond 0).
func (c Config) Limiter(rdb redis.UniversalClient, service string, log *slog.Logger) *Limiter {
	if rdb == nil || c.PerSecond == 0 {
		return nil
	}
	return New(rdb, service, c.Limit(), log)
}

// redisBudget bounds the limiter's Redis round trip: past it the request is
// served unlimited rather than delayed.
const redisBudget = 200 * time.Millisecond

// Limiter counts requests per client. It is safe for concurrent use.
type Limiter struct {
	limiter  *redis_rate.Limiter
	limit    redis_rate.Limit
	prefix   string
	maxLease int
	log      *slog.Logger
	failing  logging.Recurring // the "failing open" log line

	// now is the clock of leases, denials and idle entries; tests replace it.
	now       func() time.Time
	clients   sync.Map     // client id → *client
	lastSweep atomic.Int64 // unix nanos of the last sweep of idle clients

	redisCalls atomic.Uint64
	local      atomic.Uint64
}

// New returns a limiter for service (a key prefix) allowing limit per client.
func New(rdb redis.UniversalClient, service string, limit redis_rate.Limit, log *slog.Logger) *Limiter {
	return &Limiter{
		limiter:  redis_rate.NewLimiter(rdb),
		limit:    limit,
		prefix:   service + ":rl:",
		maxLease: max(1, limit.Burst/10),
		log:      log,
		now:      time.Now,
	}
}

// Middleware answers 429 with Retry-After to a client over its limit and
// sets the RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and
// RateLimit-Policy headers (draft-ietf-httpapi-ratelimit-headers) on every
// answer it counts. It must follow tokenauth's middleware: the key is the
// token's client id. A request is served when Redis fails or is slow (fail
// open), logged at most once a minute.
func (l *Limiter) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		claims := tokenauth.FromContext(c)
		if claims == nil || claims.ClientID == "" {
			c.Next()
			return
		}
		l.count(c, claims.ClientID)
	}
}

// AddressMiddleware is Middleware for a route that needs no token: the key
// is the client's address (gin's ClientIP: the peer, or what a trusted
// proxy says; an IPv6 address counts by its /64), so that each address gets
// the limit a client gets.
func (l *Limiter) AddressMiddleware() gin.HandlerFunc {
	return func(c *gin.Context) { l.count(c, "addr:"+AddressKey(c.ClientIP())) }
}

// count counts the request against key's budget and serves it, with the
// quota's headers, unless the budget is spent (429) or Redis cannot answer
// (served without headers).
func (l *Limiter) count(c *gin.Context, key string) {
	d, err := l.decide(c.Request.Context(), key)
	if err != nil {
		l.failOpen(c, err)
		c.Next()
		return
	}
	setHeaders(c, l.limit, d)
	if !d.allowed {
		apireply.Abort(c, apierror.RateLimited(d.retryAfter))
		return
	}
	c.Next()
}

// AddressKey is the key of an address's budget: an IPv4 address as it is,
// an IPv6 address by its /64 (what one host or site usually holds), so
// that one host cannot spread its requests over 2^64 keys. auth's sign-in
// and client-authentication throttling key addresses with it too: their
// HTTP handlers pass the key to the business packages.
func AddressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// setHeaders writes the client's quota: the burst, what is left of it and the
// whole seconds until it is full again.
func setHeaders(c *gin.Context, limit redis_rate.Limit, d decision) {
	h := c.Writer.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(limit.Burst))
	h.Set("RateLimit-Remaining", strconv.Itoa(max(d.remaining, 0)))
	h.Set("RateLimit-Reset", strconv.Itoa(ceilSeconds(d.resetAfter)))
	h.Set("RateLimit-Policy", strconv.Itoa(limit.Burst)+";w="+strconv.Itoa(ceilSeconds(limit.Period)))
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

func (l *Limiter) failOpen(c *gin.Context, err error) {
	if !l.failing.Due(l.now()) {
		return
	}
	l.log.WarnContext(c.Request.Context(), "rate limiting is off: redis cannot answer", "err", err.Error())
}
