package ratelimit

import "github.com/prometheus/client_golang/prometheus"

// Stats counts the limiter's decisions since it was made.
type Stats struct {
	// RedisCalls is how many requests asked Redis (including failed calls).
	RedisCalls uint64
	// Local is how many requests were decided without Redis: served from a
	// lease, or refused while an earlier refusal still holds.
	Local uint64
}

// Stats returns the counts so far.
func (l *Limiter) Stats() Stats {
	return Stats{RedisCalls: l.redisCalls.Load(), Local: l.local.Load()}
}

// Collector returns a Prometheus collector of Stats
// (ratelimit_redis_calls_total, ratelimit_local_decisions_total). Register
// it on the service's metrics registry.
func (l *Limiter) Collector() prometheus.Collector {
	return &collector{
		l:          l,
		redisCalls: prometheus.NewDesc("ratelimit_redis_calls_total", "Rate-limit decisions that asked Redis.", nil, nil),
		local:      prometheus.NewDesc("ratelimit_local_decisions_total", "Rate-limit decisions made from a lease or an earlier refusal, without Redis.", nil, nil),
	}
}

type collector struct {
	l                 *Limiter
	redisCalls, local *prometheus.Desc
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.redisCalls
	ch <- c.local
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.l.Stats()
	ch <- prometheus.MustNewConstMetric(c.redisCalls, prometheus.CounterValue, float64(s.RedisCalls))
	ch <- prometheus.MustNewConstMetric(c.local, prometheus.CounterValue, float64(s.Local))
}
