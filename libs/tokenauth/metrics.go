package tokenauth

import "github.com/prometheus/client_golang/prometheus"

// RevocationStats is what the validator holds of the revocation feed.
type RevocationStats struct {
	// Held is the number of entries held (jtis, sids, cutoffs).
	Held int
	// Dropped counts the entries dropped over Config.MaxRevocations.
	Dropped int64
	// Floor is the unix second up to which every token expiring is
	// treated as revoked because entries were dropped (0: none).
	Floor int64
}

// RevocationStats returns the current counts.
func (v *Validator) RevocationStats() RevocationStats {
	held, floor, dropped := v.revoked.stats()
	return RevocationStats{Held: held, Dropped: dropped, Floor: floor}
}

// Collector returns a Prometheus collector of RevocationStats
// (tokenauth_revocations_held, tokenauth_revocations_dropped_total,
// tokenauth_revocation_floor_seconds). Register it on the service's
// metrics registry.
func (v *Validator) Collector() prometheus.Collector {
	return &collector{v: v,
		held:    prometheus.NewDesc("tokenauth_revocations_held", "Revocation-feed entries this replica holds in memory.", nil, nil),
		dropped: prometheus.NewDesc("tokenauth_revocations_dropped_total", "Revocation-feed entries dropped over the cap (tokens expiring by then are refused).", nil, nil),
		floor:   prometheus.NewDesc("tokenauth_revocation_floor_seconds", "Unix time up to which every expiring token is refused because entries were dropped (0: none).", nil, nil),
	}
}

type collector struct {
	v                    *Validator
	held, dropped, floor *prometheus.Desc
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.held
	ch <- c.dropped
	ch <- c.floor
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.v.RevocationStats()
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(s.Held))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.Dropped))
	ch <- prometheus.MustNewConstMetric(c.floor, prometheus.GaugeValue, float64(s.Floor))
}
