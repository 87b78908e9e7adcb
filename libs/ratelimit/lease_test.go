package ratelimit_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eventreg/eventreg/libs/ratelimit"
	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

// clock is a settable time for leases, refusals and idle entries. Redis keeps
// real time, so tests using it keep well inside the limit they set.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(l *ratelimit.Limiter) *clock {
	c := &clock{now: time.Now()}
	ratelimit.SetClock(l, c.Now)
	return c
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestGlobalLimitHoldsAcrossReplicas(t *testing.T) {
	const rate, burst = 50, 50
	redisURL := testkit.NewRedis(t)
	e := newEnv(t)
	limit := redis_rate.Limit{Rate: rate, Burst: burst, Period: time.Second}
	replicas := []*ratelimit.Limiter{e.limiter(t, redisURL, limit), e.limiter(t, redisURL, limit)}
	tok := e.ts.Sign(t, "client:621", time.Now().Add(time.Hour), "user:read")

	var served, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(1500 * time.Millisecond)
	for _, l := range replicas {
		r := e.engine(l)
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					switch w := get(r, tok); w.Code {
					case 204:
						served.Add(1)
					case 429:
						refused.Add(1)
					default:
						t.Errorf("status %d", w.Code)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	allowance := burst + rate*elapsed.Seconds()
	got := float64(served.Load())
	for i, l := range replicas {
		t.Logf("replica %d: %+v", i, l.Stats())
	}
	t.Logf("%v: %d served, %d refused, allowance %.1f", elapsed, served.Load(), refused.Load(), allowance)
	if got > allowance+1 {
		t.Fatalf("served %.0f, more than the allowance %.1f", got, allowance)
	}
	if got < 0.7*allowance {
		t.Fatalf("served %.0f, under 70%% of the allowance %.1f: leases starve the client", got, allowance)
	}
	if refused.Load() == 0 {
		t.Fatal("nothing refused")
	}
}

func TestLeaseSizeFollowsTheClientsRate(t *testing.T) {
	redisURL := testkit.NewRedis(t)
	e := newEnv(t)
	tok := e.ts.Sign(t, "client:631", time.Now().Add(time.Hour), "user:read")
	// Both clients stay far inside the limit in Redis's real time too: the
	// fake clock only decides the rate this replica sees.
	send := func(t *testing.T, l *ratelimit.Limiter, requests int, every time.Duration) {
		t.Helper()
		r, c := e.engine(l), newClock(l)
		for i := range requests {
			if w := get(r, tok); w.Code != 204 {
				t.Fatalf("request %d: %d", i, w.Code)
			}
			c.Advance(every)
		}
	}
	t.Run("a client sending a few requests a second asks Redis on every request", func(t *testing.T) {
		// Not every 100 ms: at 10 a second, 2.5 requests fall within one
		// lease, so a lease of 2 is what the design asks for there.
		l := e.limiter(t, redisURL, redis_rate.Limit{Rate: 100, Burst: 100, Period: time.Second})
		send(t, l, 20, 300*time.Millisecond)
		if s := l.Stats(); s.RedisCalls != 20 || s.Local != 0 {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("a busy client asks Redis at most once in 5 requests", func(t *testing.T) {
		l := e.limiter(t, redisURL, redis_rate.Limit{Rate: 1000, Burst: 1000, Period: time.Second})
		send(t, l, 400, 5*time.Millisecond)
		if s := l.Stats(); s.RedisCalls*5 > 400 || s.RedisCalls+s.Local != 400 {
			t.Fatalf("%+v", s)
		}
		t.Logf("%+v", l.Stats())
	})
}

func TestRefusedClientIsRefusedLocally(t *testing.T) {
	e := newEnv(t)
	l := e.limiter(t, testkit.NewRedis(t), redis_rate.Limit{Rate: 1, Burst: 1, Period: time.Minute})
	r, c := e.engine(l), newClock(l)
	tok := e.ts.Sign(t, "client:641", time.Now().Add(time.Hour), "user:read")
	if w := get(r, tok); w.Code != 204 {
		t.Fatalf("%d", w.Code)
	}
	if w := get(r, tok); w.Code != 429 || w.Header().Get("Retry-After") != "60" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	t.Run("within Retry-After every answer is a 429 without asking Redis", func(t *testing.T) {
		for i := range 5 {
			c.Advance(10 * time.Second)
			w := get(r, tok)
			want := strconv.Itoa(60 - 10*(i+1))
			if w.Code != 429 || w.Header().Get("Retry-After") != want || w.Header().Get("RateLimit-Remaining") != "0" {
				t.Fatalf("request %d: %d %v, want Retry-After %s", i, w.Code, w.Header(), want)
			}
		}
		if s := l.Stats(); s.RedisCalls != 2 || s.Local != 5 {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("after Retry-After Redis is asked again", func(t *testing.T) {
		c.Advance(11 * time.Second)
		// Redis's own clock has hardly moved, so it refuses again.
		if w := get(r, tok); w.Code != 429 || l.Stats().RedisCalls != 3 {
			t.Fatalf("%d %+v", w.Code, l.Stats())
		}
	})
}

func TestHeadersOnLocallyServedAnswers(t *testing.T) {
	e := newEnv(t)
	l := e.limiter(t, testkit.NewRedis(t), redis_rate.Limit{Rate: 100, Burst: 100, Period: time.Second})
	r, c := e.engine(l), newClock(l)
	tok := e.ts.Sign(t, "client:651", time.Now().Add(time.Hour), "user:read")
	// 150 requests at 100 a second by the fake clock are about 150 at once
	// for Redis: the burst runs out and the last ones are refused.
	var local, refused int
	prev := -1
	for i := range 150 {
		before := l.Stats()
		w := get(r, tok)
		c.Advance(10 * time.Millisecond)
		h := w.Header()
		remaining, err := strconv.Atoi(h.Get("RateLimit-Remaining"))
		if err != nil || remaining < 0 || h.Get("RateLimit-Limit") != "100" || h.Get("RateLimit-Policy") != "100;w=1" || h.Get("RateLimit-Reset") == "" {
			t.Fatalf("request %d: %d %v", i, w.Code, h)
		}
		decidedLocally := l.Stats().Local > before.Local
		switch {
		case w.Code == 204 && decidedLocally:
			local++
			// A lease is spent one token at a time.
			if remaining != prev-1 {
				t.Fatalf("request %d: remaining %d after %d", i, remaining, prev)
			}
		case w.Code == 429:
			refused++
			if h.Get("Retry-After") == "" || remaining != 0 {
				t.Fatalf("request %d: %v", i, h)
			}
		}
		prev = remaining
	}
	if local == 0 || refused == 0 {
		t.Fatalf("%d served locally, %d refused", local, refused)
	}
}

func TestIdleClientsAreDropped(t *testing.T) {
	e := newEnv(t)
	l := e.limiter(t, testkit.NewRedis(t), redis_rate.Limit{Rate: 100, Burst: 100, Period: time.Second})
	r, c := e.engine(l), newClock(l)
	a := e.ts.Sign(t, "client:661", time.Now().Add(time.Hour), "user:read")
	b := e.ts.Sign(t, "client:662", time.Now().Add(time.Hour), "user:read")
	get(r, a)
	get(r, b)
	c.Advance(30 * time.Second)
	get(r, b)
	if n := ratelimit.Clients(l); n != 2 {
		t.Fatalf("%d clients", n)
	}
	c.Advance(31 * time.Second)
	get(r, b)
	if n := ratelimit.Clients(l); n != 1 {
		t.Fatalf("%d clients after a minute idle, want 1", n)
	}
}

func TestStatsCollector(t *testing.T) {
	port, _ := testkit.FreePort()
	rdb, err := redisdb.Open(fmt.Sprintf("redis://127.0.0.1:%d/0", port), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	l := ratelimit.New(rdb, "test", ratelimit.DefaultLimit, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if ok, err := ratelimit.Decide(context.Background(), l, "client:671"); ok || err == nil {
		t.Fatalf("%v %v", ok, err)
	}
	c := l.Collector()
	if n := testutil.CollectAndCount(c); n != 2 {
		t.Fatalf("%d metrics", n)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP ratelimit_local_decisions_total Rate-limit decisions made from a lease or an earlier refusal, without Redis.
# TYPE ratelimit_local_decisions_total counter
ratelimit_local_decisions_total 0
# HELP ratelimit_redis_calls_total Rate-limit decisions that asked Redis.
# TYPE ratelimit_redis_calls_total counter
ratelimit_redis_calls_total 1
`)); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkMiddleware measures the middleware's decision for one busy client
// (the token check excluded) and reports the Redis calls it makes per request.
func BenchmarkMiddleware(b *testing.B) {
	redisURL := testkit.NewRedis(b)
	cases := []struct {
		name  string
		limit redis_rate.Limit
	}{
		// A burst under 10 makes leases of 1: every request asks Redis, as
		// before leases.
		{"every request asks Redis", redis_rate.Limit{Rate: 10_000_000, Burst: 9, Period: time.Second}},
		// Within the limit, a burst of 100 (the default) leases 10 at most.
		{"leases of 10", redis_rate.Limit{Rate: 10_000_000, Burst: 100, Period: time.Second}},
		{"leases of 100000", redis_rate.Limit{Rate: 10_000_000, Burst: 1_000_000, Period: time.Second}},
		{"over the default limit", ratelimit.DefaultLimit},
	}
	for _, tc := range cases {
		for _, parallel := range []bool{false, true} {
			name := tc.name
			if parallel {
				name += "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				rdb, err := redisdb.Open(redisURL, false)
				if err != nil {
					b.Fatal(err)
				}
				defer rdb.Close()
				l := ratelimit.New(rdb, "bench", tc.limit, slog.New(slog.NewTextHandler(io.Discard, nil)))
				client := "client:" + name
				ctx := context.Background()
				// Redis failing would be failing open: not what is measured.
				decide := func() {
					if _, err := ratelimit.Decide(ctx, l, client); err != nil {
						b.Error(err)
					}
				}
				if parallel {
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							decide()
						}
					})
				} else {
					for b.Loop() {
						decide()
					}
				}
				b.ReportMetric(float64(l.Stats().RedisCalls)/float64(b.N), "redis-calls/op")
			})
		}
	}
}
