// Package authmetrics holds the authorization server's business counters, exported on the internal listener's /metrics.
package authmetrics

import "github.com/prometheus/client_golang/prometheus"

// Reasons a client authentication failed (the reason label).
const (
	ClientAuthInvalid   = "invalid_credentials" // unknown client or wrong secret
	ClientAuthThrottled = "throttled"           // refused while the client is blocked
)

// Decisions on the consent page (the decision label).
const (
	ConsentGranted = "granted"
	ConsentDenied  = "denied"
)

// Metrics are the counters. A nil *Metrics counts nothing, so handlers built
// without a registry (tests of one layer) need no wiring.
type Metrics struct {
	reg                prometheus.Registerer
	tokensIssued       *prometheus.CounterVec
	refreshReuse       prometheus.Counter
	clientAuthFailures *prometheus.CounterVec
	loginFailures      prometheus.Counter
	consentDecisions   *prometheus.CounterVec
}

// New registers the counters on reg. Every label has a fixed, small set of
// values: grant types and client kinds the server knows, never ids.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reg: reg,
		tokensIssued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "auth_tokens_issued_total",
			Help: "Access tokens issued by the token endpoint, by grant type and client kind.",
		}, []string{"grant_type", "client_kind"}),
		refreshReuse: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "auth_refresh_token_reuse_total",
			Help: "Rotated refresh tokens presented again (the token family was revoked).",
		}),
		clientAuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "auth_client_authentication_failures_total",
			Help: "Failed client authentications at the token, revocation and introspection endpoints, by reason.",
		}, []string{"reason"}),
		loginFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "auth_login_failures_total",
			Help: "Sign-ins refused for a wrong username or password.",
		}),
		consentDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "auth_consent_decisions_total",
			Help: "Decisions on the consent page, by decision (granted or denied).",
		}, []string{"decision"}),
	}
	reg.MustRegister(m.tokensIssued, m.refreshReuse, m.clientAuthFailures, m.loginFailures, m.consentDecisions)
	// Start the known series at zero so that rate() and alerts see them
	// before the first event.
	for _, g := range []string{"client_credentials", "authorization_code", "refresh_token"} {
		for _, k := range []string{"service", "obo"} {
			m.tokensIssued.WithLabelValues(g, k)
		}
	}
	m.clientAuthFailures.WithLabelValues(ClientAuthInvalid)
	m.clientAuthFailures.WithLabelValues(ClientAuthThrottled)
	m.consentDecisions.WithLabelValues(ConsentGranted)
	m.consentDecisions.WithLabelValues(ConsentDenied)
	return m
}

// Registerer is the registry the counters are on, for the other metrics of
// the service (webhooks); nil for a nil *Metrics.
func (m *Metrics) Registerer() prometheus.Registerer {
	if m == nil {
		return nil
	}
	return m.reg
}

// TokenIssued counts a token response.
func (m *Metrics) TokenIssued(grantType, clientKind string) {
	if m != nil {
		m.tokensIssued.WithLabelValues(grantType, clientKind).Inc()
	}
}

// RefreshReuse counts a detected refresh-token reuse.
func (m *Metrics) RefreshReuse() {
	if m != nil {
		m.refreshReuse.Inc()
	}
}

// ClientAuthFailed counts a failed client authentication; reason is
// ClientAuthInvalid or ClientAuthThrottled.
func (m *Metrics) ClientAuthFailed(reason string) {
	if m != nil {
		m.clientAuthFailures.WithLabelValues(reason).Inc()
	}
}

// LoginFailed counts a sign-in refused for bad credentials.
func (m *Metrics) LoginFailed() {
	if m != nil {
		m.loginFailures.Inc()
	}
}

// ConsentDecided counts a consent decision: ConsentGranted or ConsentDenied.
func (m *Metrics) ConsentDecided(decision string) {
	if m != nil {
		m.consentDecisions.WithLabelValues(decision).Inc()
	}
}

// WatchRevocationFeed exports size (the number of entries in the revocation
// feed, refreshdb.Denylist.Size) as auth_revocation_feed_entries.
func (m *Metrics) WatchRevocationFeed(size func() int64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "auth_revocation_feed_entries",
		Help: "Entries in the revocation feed at its last read or write (one per revoked family or client cutoff).",
	}, func() float64 { return float64(size()) }))
}
