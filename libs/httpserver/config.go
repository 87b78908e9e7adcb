package httpserver

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Config holds the listener settings every service shares; embed it in a
// service's configuration struct.
type Config struct {
	PublicAddr   string `env:"PUBLIC_ADDR" envDefault:":8080"`
	InternalAddr string `env:"INTERNAL_ADDR" envDefault:":9090"`
	// OpsAddr serves /healthz, /readyz, /metrics and the profiles, apart
	// from the internal API, so that what may reach one (probes, Prometheus)
	// reaches nothing of the other.
	OpsAddr           string        `env:"OPS_ADDR" envDefault:":9091"`
	BodyLimit         int64         `env:"BODY_LIMIT_BYTES" envDefault:"1048576"`
	ReadHeaderTimeout time.Duration `env:"HTTP_READ_HEADER_TIMEOUT" envDefault:"5s"`
	ReadTimeout       time.Duration `env:"HTTP_READ_TIMEOUT" envDefault:"15s"`
	WriteTimeout      time.Duration `env:"HTTP_WRITE_TIMEOUT" envDefault:"30s"`
	IdleTimeout       time.Duration `env:"HTTP_IDLE_TIMEOUT" envDefault:"120s"`
	ShutdownTimeout   time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"20s"`
	// RequestTimeout is the deadline of each request's context on both
	// listeners: work bound to it (queries, calls to other services) stops
	// there and the request is answered 503, within the 5 s clients wait.
	// Zero or less is DefaultRequestTimeout. Routes that bound their own work
	// are taken out with Server.ExemptFromRequestTimeout.
	RequestTimeout time.Duration `env:"REQUEST_TIMEOUT" envDefault:"3s"`
	// ShutdownDelay keeps serving (with /readyz failing) this long after SIGTERM
	// so that load balancers stop sending before the listener closes.
	ShutdownDelay time.Duration `env:"SHUTDOWN_DELAY" envDefault:"0s"`
	// Pprof serves Go's profiles under /debug/pprof/ on the ops listener
	// (never the public or internal one): CPU, heap, goroutines, mutex and block.
	Pprof bool `env:"PPROF_ENABLED" envDefault:"false"`
	// TrustedProxies are the peers (CIDRs or addresses) whose X-Forwarded-For
	// and X-Real-IP headers name the client; from any other peer those headers
	// are ignored and the peer's own address is the client's. The default is
	// loopback: the local gateway. In a cluster, the ingress controller's pods.
	TrustedProxies []string `env:"TRUSTED_PROXIES" envSeparator:"," envDefault:"127.0.0.1/32,::1/128"`
	// Tracing makes a span of every request (otelgin). Off, requests only
	// take up the caller's trace context (W3C traceparent), so that log lines
	// and outgoing calls carry the caller's trace id. Not read from the
	// environment: the service sets it from telemetry.TracesEnabled.
	Tracing bool
}

// DefaultRequestTimeout is REQUEST_TIMEOUT's default.
const DefaultRequestTimeout = 3 * time.Second

// CheckTrustedProxies reports an entry of TRUSTED_PROXIES that is neither a
// CIDR nor an address.
func (c Config) CheckTrustedProxies() error {
	for _, p := range c.TrustedProxies {
		p = strings.TrimSpace(p)
		if _, err := netip.ParsePrefix(p); err == nil {
			continue
		}
		if _, err := netip.ParseAddr(p); err == nil {
			continue
		}
		return fmt.Errorf("TRUSTED_PROXIES: %q is neither a CIDR (10.0.0.0/8) nor an IP address", p)
	}
	return nil
}
