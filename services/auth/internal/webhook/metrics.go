package webhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventreg/eventreg/libs/authapi"
)

// Outcomes of a delivery attempt (the outcome label).
const (
	OutcomeDelivered = "delivered" // the endpoint answered 2xx
	OutcomeFailed    = "failed"    // no 2xx; it will be retried
	OutcomeRefused   = "refused"   // the target policy refused the address; it will be retried
	OutcomeDead      = "dead"      // given up: retries exhausted, or the app lost the event's scope
)

// Metrics are the webhook metrics. A nil *Metrics counts nothing.
type Metrics struct {
	events     *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	latency    *prometheus.HistogramVec
}

// NewMetrics registers the metrics on reg (nil: none). Labels take fixed
// values only: event types and outcomes, never ids or URLs.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		return nil
	}
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventreg_webhook_events_total",
			Help: "Events received from the resource services for webhooks (new ones; a batch sent again is not counted twice), by type.",
		}, []string{"event"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventreg_webhook_deliveries_total",
			Help: "Webhook delivery attempts by event type and outcome (delivered, failed, refused, dead).",
		}, []string{"event", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventreg_webhook_delivery_latency_seconds",
			Help:    "Time from an event's commit to its delivery's 2xx answer, by event type.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400},
		}, []string{"event"}),
	}
	reg.MustRegister(m.events, m.deliveries, m.latency)
	for _, t := range authapi.EventTypes {
		m.events.WithLabelValues(t)
		for _, o := range []string{OutcomeDelivered, OutcomeFailed, OutcomeRefused, OutcomeDead} {
			m.deliveries.WithLabelValues(t, o)
		}
	}
	return m
}

func (m *Metrics) eventReceived(eventType string) {
	if m != nil {
		m.events.WithLabelValues(eventType).Inc()
	}
}

func (m *Metrics) attempted(eventType, outcome string) {
	if m != nil {
		m.deliveries.WithLabelValues(eventType, outcome).Inc()
	}
}

func (m *Metrics) delivered(eventType string, sinceCommit time.Duration) {
	if m != nil {
		m.latency.WithLabelValues(eventType).Observe(sinceCommit.Seconds())
	}
}
