package redisdb

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// poolCollector exports the client's connection-pool statistics.
type poolCollector struct {
	client                 redis.UniversalClient
	hits, misses, timeouts *prometheus.Desc
	total, idle, stale     *prometheus.Desc
}

// NewPoolCollector returns a Prometheus collector of client's pool stats
// (redis_pool_*). Register it on the service's metrics registry.
func NewPoolCollector(client redis.UniversalClient) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("redis_pool_"+name, help, nil, nil)
	}
	return &poolCollector{
		client:   client,
		hits:     d("hits_total", "Times a free connection was found in the pool."),
		misses:   d("misses_total", "Times no free connection was found in the pool."),
		timeouts: d("timeouts_total", "Times a wait for a connection timed out."),
		total:    d("connections", "Connections in the pool."),
		idle:     d("idle_connections", "Idle connections in the pool."),
		stale:    d("stale_connections_total", "Stale connections removed from the pool."),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hits, c.misses, c.timeouts, c.total, c.idle, c.stale} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.client.PoolStats()
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.Timeouts))
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(s.TotalConns))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.IdleConns))
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.CounterValue, float64(s.StaleConns))
}
