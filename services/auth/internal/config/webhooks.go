package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Webhooks configures the webhook subsystem of `auth serve`: the API is
// always served; the dispatcher runs when Delivery is true.
type Webhooks struct {
	// Delivery runs the dispatcher in this replica (any number of replicas
	// may; they share the work through leases).
	Delivery bool `env:"WEBHOOK_DELIVERY" envDefault:"true"`
	// Workers bounds the deliveries in flight in this replica.
	Workers int `env:"WEBHOOK_WORKERS" envDefault:"64"`
	// EndpointConcurrency bounds the deliveries in flight to one
	// subscription, across every replica.
	EndpointConcurrency int `env:"WEBHOOK_ENDPOINT_CONCURRENCY" envDefault:"4"`
	// AppConcurrency bounds the deliveries in flight to one app's
	// subscriptions together, across every replica, so that one app's slow
	// endpoints cannot hold every worker. 0: a quarter of Workers.
	AppConcurrency int `env:"WEBHOOK_APP_CONCURRENCY" envDefault:"0"`
	// Timeout bounds one delivery: connect, send, answer.
	Timeout time.Duration `env:"WEBHOOK_TIMEOUT" envDefault:"5s"`
	// Lease is how long a claimed delivery is reserved to its dispatcher; a
	// crashed dispatcher's deliveries are retried when it ends.
	Lease time.Duration `env:"WEBHOOK_LEASE" envDefault:"30s"`
	// PollInterval is the fallback when no notification wakes the dispatcher.
	PollInterval time.Duration `env:"WEBHOOK_POLL_INTERVAL" envDefault:"1s"`
	// RetryBase is the first retry's delay ceiling; it doubles per attempt
	// up to RetryMax (full jitter).
	RetryBase time.Duration `env:"WEBHOOK_RETRY_BASE" envDefault:"1s"`
	RetryMax  time.Duration `env:"WEBHOOK_RETRY_MAX" envDefault:"1h"`
	// RetryFor: a delivery still failing this long after its event (or its
	// replay) is dead.
	RetryFor time.Duration `env:"WEBHOOK_RETRY_FOR" envDefault:"24h"`
	// DisableAfter: a subscription without a successful delivery for this
	// long, while deliveries fail, is disabled.
	DisableAfter time.Duration `env:"WEBHOOK_DISABLE_AFTER" envDefault:"72h"`
	// Retention keeps delivered deliveries this long; DeadRetention dead ones.
	Retention     time.Duration `env:"WEBHOOK_RETENTION" envDefault:"168h"`
	DeadRetention time.Duration `env:"WEBHOOK_DEAD_RETENTION" envDefault:"720h"`
	// AllowedNetworks are CIDRs that targets may resolve into although they
	// are not public (loopback, private, link-local ...); http is allowed
	// only for targets inside them.
	AllowedNetworks []string `env:"WEBHOOK_ALLOWED_NETWORKS" envSeparator:","`
}

// Validate checks the rules the types cannot express.
func (w *Webhooks) Validate() error {
	var errs []error
	if w.Workers < 1 || w.Workers > 10_000 {
		errs = append(errs, errors.New("WEBHOOK_WORKERS must be between 1 and 10000"))
	}
	if w.EndpointConcurrency < 1 || w.EndpointConcurrency > 1_000 {
		errs = append(errs, errors.New("WEBHOOK_ENDPOINT_CONCURRENCY must be between 1 and 1000"))
	}
	if w.AppConcurrency < 0 || w.AppConcurrency > 10_000 {
		errs = append(errs, errors.New("WEBHOOK_APP_CONCURRENCY must be between 1 and 10000 (0: a quarter of WEBHOOK_WORKERS)"))
	}
	if w.Timeout < 100*time.Millisecond || w.Timeout > time.Minute {
		errs = append(errs, errors.New("WEBHOOK_TIMEOUT must be between 100ms and 1m"))
	}
	if w.Lease <= w.Timeout {
		errs = append(errs, errors.New("WEBHOOK_LEASE must be longer than WEBHOOK_TIMEOUT (a delivery in flight must never be claimed again)"))
	}
	if w.PollInterval < 10*time.Millisecond || w.PollInterval > time.Minute {
		errs = append(errs, errors.New("WEBHOOK_POLL_INTERVAL must be between 10ms and 1m"))
	}
	if w.RetryBase < time.Millisecond || w.RetryMax < w.RetryBase {
		errs = append(errs, errors.New("WEBHOOK_RETRY_BASE must be at least 1ms and WEBHOOK_RETRY_MAX at least WEBHOOK_RETRY_BASE"))
	}
	if w.RetryFor < time.Second {
		errs = append(errs, errors.New("WEBHOOK_RETRY_FOR must be at least 1s"))
	}
	if w.DisableAfter < time.Second {
		errs = append(errs, errors.New("WEBHOOK_DISABLE_AFTER must be at least 1s"))
	}
	if w.Retention < time.Minute || w.DeadRetention < time.Minute {
		errs = append(errs, errors.New("WEBHOOK_RETENTION and WEBHOOK_DEAD_RETENTION must be at least 1m"))
	}
	if _, err := w.Networks(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// AppLimit is the app concurrency in force: AppConcurrency, or a quarter
// of Workers (at least 1) when it is 0.
func (w *Webhooks) AppLimit() int {
	if w.AppConcurrency > 0 {
		return w.AppConcurrency
	}
	return max(1, w.Workers/4)
}

// Networks parses AllowedNetworks (empty entries are skipped).
func (w *Webhooks) Networks() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, raw := range w.AllowedNetworks {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		p, err := netip.ParsePrefix(raw)
		if err != nil {
			return nil, fmt.Errorf("WEBHOOK_ALLOWED_NETWORKS: %q is not a CIDR such as 10.1.0.0/16", raw)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
