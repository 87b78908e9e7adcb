// Package convention is the public configuration of a deployment: the
// organization it serves and that organization's conventions (GET
// /api/config), validated from a fixture and read through a short-lived
// in-memory copy (decision 0097).
package convention

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// ErrNotConfigured is returned when no organization was imported yet.
var ErrNotConfigured = errors.New("the organization is not configured")

// Organization is the organization a deployment serves.
type Organization struct {
	Name    string
	Country string // ISO 3166-1 alpha-2
}

// Convention is one edition of the organization's convention.
type Convention struct {
	ID       string
	Name     string
	LongName string
	Domain   string // the registration site's host name
	StartAt  time.Time
	EndAt    time.Time
	TimeZone string // IANA; StartAt and EndAt are shown in it
	Venue    string
}

// Config is the whole public configuration.
type Config struct {
	Organization Organization
	// Conventions are in start order.
	Conventions []Convention
}

// Store is what the business layer needs from storage.
type Store interface {
	// Read returns ErrNotConfigured when no organization is stored.
	Read(ctx context.Context) (Config, error)
	// Replace stores org (when not nil) and, when convs is not nil, makes
	// them the whole list of conventions, in one transaction.
	Replace(ctx context.Context, org *Organization, convs []Convention) error
}

// TTL is how long a replica serves the configuration it read: an import
// shows on every replica within it.
const TTL = 10 * time.Second

// readTimeout bounds the shared read of the configuration.
const readTimeout = 3 * time.Second

// Service reads the public configuration through an in-memory copy kept for
// TTL; concurrent misses share one query.
type Service struct {
	store Store
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	cached  *Config
	expires time.Time
	flight  singleflight.Group
}

// NewService returns the service over store, keeping what it read for ttl
// (0: TTL).
func NewService(store Store, ttl time.Duration) *Service {
	if ttl <= 0 {
		ttl = TTL
	}
	return &Service{store: store, ttl: ttl, now: time.Now}
}

// Get returns the public configuration. A failed read is not kept: the next
// request asks the database again.
func (s *Service) Get(ctx context.Context) (Config, error) {
	s.mu.Lock()
	if s.cached != nil && s.now().Before(s.expires) {
		c := *s.cached
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	v, err, _ := s.flight.Do("config", func() (any, error) {
		// The query is shared: one caller giving up must not fail the
		// others, so it runs on its own deadline, keeping the trace.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		c, err := s.store.Read(rctx)
		if err != nil {
			return Config{}, err
		}
		s.mu.Lock()
		s.cached, s.expires = &c, s.now().Add(s.ttl)
		s.mu.Unlock()
		return c, nil
	})
	if err != nil {
		return Config{}, err
	}
	return v.(Config), nil
}
