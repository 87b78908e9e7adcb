package authmetrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eventreg/eventreg/services/auth/internal/authmetrics"
)

// TestCounters: the known series start at zero (alerts see them before the
// first event), each method counts under its labels, the revocation feed's
// size is read when scraped, and a nil *Metrics counts nothing.
func TestCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := authmetrics.New(reg)
	if n, err := testutil.GatherAndCount(reg, "auth_tokens_issued_total"); err != nil || n != 6 {
		t.Fatalf("token series before any token: %d %v (want the 3 grant types × 2 client kinds)", n, err)
	}

	m.TokenIssued("refresh_token", "obo")
	m.TokenIssued("refresh_token", "obo")
	m.RefreshReuse()
	m.ClientAuthFailed(authmetrics.ClientAuthThrottled)
	m.LoginFailed()
	m.ConsentDecided(authmetrics.ConsentDenied)
	size := int64(7)
	m.WatchRevocationFeed(func() int64 { return size })

	want := `
# HELP auth_consent_decisions_total Decisions on the consent page, by decision (granted or denied).
# TYPE auth_consent_decisions_total counter
auth_consent_decisions_total{decision="denied"} 1
auth_consent_decisions_total{decision="granted"} 0
# HELP auth_client_authentication_failures_total Failed client authentications at the token, revocation and introspection endpoints, by reason.
# TYPE auth_client_authentication_failures_total counter
auth_client_authentication_failures_total{reason="invalid_credentials"} 0
auth_client_authentication_failures_total{reason="throttled"} 1
# HELP auth_tokens_issued_total Access tokens issued by the token endpoint, by grant type and client kind.
# TYPE auth_tokens_issued_total counter
auth_tokens_issued_total{client_kind="obo",grant_type="authorization_code"} 0
auth_tokens_issued_total{client_kind="obo",grant_type="client_credentials"} 0
auth_tokens_issued_total{client_kind="obo",grant_type="refresh_token"} 2
auth_tokens_issued_total{client_kind="service",grant_type="authorization_code"} 0
auth_tokens_issued_total{client_kind="service",grant_type="client_credentials"} 0
auth_tokens_issued_total{client_kind="service",grant_type="refresh_token"} 0
# HELP auth_login_failures_total Sign-ins refused for a wrong username or password.
# TYPE auth_login_failures_total counter
auth_login_failures_total 1
# HELP auth_refresh_token_reuse_total Rotated refresh tokens presented again (the token family was revoked).
# TYPE auth_refresh_token_reuse_total counter
auth_refresh_token_reuse_total 1
# HELP auth_revocation_feed_entries Entries in the revocation feed at its last read or write (one per revoked family or client cutoff).
# TYPE auth_revocation_feed_entries gauge
auth_revocation_feed_entries 7
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "auth_consent_decisions_total", "auth_tokens_issued_total",
		"auth_client_authentication_failures_total", "auth_login_failures_total", "auth_refresh_token_reuse_total",
		"auth_revocation_feed_entries"); err != nil {
		t.Fatal(err)
	}
	if m.Registerer() != reg {
		t.Fatal("Registerer is not the registry the counters are on")
	}

	var none *authmetrics.Metrics
	none.TokenIssued("client_credentials", "service")
	none.RefreshReuse()
	none.ClientAuthFailed(authmetrics.ClientAuthInvalid)
	none.LoginFailed()
	none.ConsentDecided(authmetrics.ConsentGranted)
	none.WatchRevocationFeed(func() int64 { return 1 })
	if none.Registerer() != nil {
		t.Fatal("a nil *Metrics has a registry")
	}
}
