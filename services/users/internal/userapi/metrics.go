package userapi

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the users service's business counters. A nil *Metrics counts
// nothing.
type Metrics struct {
	roleChanges *prometheus.CounterVec
}

// NewMetrics registers the counters on reg: users_role_changes_total by
// change (granted or revoked), never by user or role id.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{roleChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "users_role_changes_total",
		Help: "Role memberships granted or revoked through the API, by change.",
	}, []string{"change"})}
	reg.MustRegister(m.roleChanges)
	m.roleChanges.WithLabelValues("granted")
	m.roleChanges.WithLabelValues("revoked")
	return m
}

func (m *Metrics) roleChanged(change string) {
	if m != nil {
		m.roleChanges.WithLabelValues(change).Inc()
	}
}
