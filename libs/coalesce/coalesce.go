// Package coalesce merges concurrent lookups by key into batched fetches: a
// service answering many single-row reads at once sends one query for a
// handful of keys instead of one query (and one database round trip) each.
//
// There is no timer: a lookup that finds no fetch running is fetched at once,
// alone or with whatever is waiting, so an idle service adds no latency.
// While fetches run, lookups queue until a fetch finishes (or MinBusyBatch of
// them are waiting and fewer than MaxInFlight fetches run), and the next fetch
// takes every queued key (up to MaxBatch) in one call.
package coalesce

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Fetch reads the values of keys (distinct, at most MaxBatch). A key missing
// from the map does not exist.
type Fetch[K comparable, V any] func(ctx context.Context, keys []K) (map[K]V, error)

// Options bound the batching.
type Options struct {
	// MaxBatch is the most keys one fetch asks for (default 100).
	MaxBatch int
	// MaxInFlight is how many fetches run at once (default 2). Fewer means
	// larger batches under load; a lookup never waits for a free slot while
	// fewer fetches than this are running.
	MaxInFlight int
	// MinBusyBatch: while a fetch runs, another (up to MaxInFlight) starts
	// only once this many lookups are queued (default 1); fewer wait for a
	// running fetch to finish and go in the next one together.
	MinBusyBatch int
	// Timeout bounds one fetch (default 10s). A fetch serves several callers,
	// so it does not end when the caller that started it gives up.
	Timeout time.Duration
}

// KeyLookups suits reads of database rows by key (the services' single-user
// reads): one query at a time, a second beside it only once six lookups
// wait, up to 100 keys a query. Fewer, larger queries cost the database and
// the service less per lookup than a query for every pair of waiting ones
// (2,2), and a second query still keeps a burst from queueing behind one
// slow query (decision 0075).
var KeyLookups = Options{MaxBatch: 100, MaxInFlight: 2, MinBusyBatch: 6}

// Loader coalesces lookups. Its zero value is not usable: see New.
type Loader[K comparable, V any] struct {
	fetch Fetch[K, V]
	opt   Options

	mu       sync.Mutex
	pending  []*call[K, V]
	inFlight int
}

type call[K comparable, V any] struct {
	key  K
	done chan result[V] // buffered: delivery never blocks on a caller who left
}

type result[V any] struct {
	v     V
	found bool
	err   error
}

// New returns a loader over fetch.
func New[K comparable, V any](fetch Fetch[K, V], opt Options) *Loader[K, V] {
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = 100
	}
	if opt.MaxInFlight <= 0 {
		opt.MaxInFlight = 2
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	return &Loader[K, V]{fetch: fetch, opt: opt}
}

// Load returns the value of key and whether it exists. The error is the
// fetch's (shared by every lookup of the batch) or ctx's.
func (l *Loader[K, V]) Load(ctx context.Context, key K) (V, bool, error) {
	c := &call[K, V]{key: key, done: make(chan result[V], 1)}
	l.mu.Lock()
	l.pending = append(l.pending, c)
	var batch []*call[K, V]
	if l.inFlight == 0 || (l.inFlight < l.opt.MaxInFlight && len(l.pending) >= l.opt.MinBusyBatch) {
		l.inFlight++
		batch = l.takeLocked()
	}
	l.mu.Unlock()
	if batch != nil {
		// This caller runs the fetch; its context carries the trace, its
		// cancellation does not end the fetch others wait for.
		l.run(context.WithoutCancel(ctx), batch)
	}
	select {
	case r := <-c.done:
		return r.v, r.found, r.err
	case <-ctx.Done():
		var zero V
		return zero, false, ctx.Err()
	}
}

// takeLocked removes up to MaxBatch pending calls.
func (l *Loader[K, V]) takeLocked() []*call[K, V] {
	n := min(len(l.pending), l.opt.MaxBatch)
	batch := make([]*call[K, V], n)
	copy(batch, l.pending)
	rest := copy(l.pending, l.pending[n:])
	clear(l.pending[rest:])
	l.pending = l.pending[:rest]
	return batch
}

// run fetches batch and delivers it, then hands the slot on: to a new
// goroutine for the calls queued meanwhile, so that the caller running this
// one returns with its own answer now.
func (l *Loader[K, V]) run(ctx context.Context, batch []*call[K, V]) {
	l.fetchAndDeliver(ctx, batch)
	l.mu.Lock()
	if len(l.pending) == 0 {
		l.inFlight--
		l.mu.Unlock()
		return
	}
	next := l.takeLocked()
	l.mu.Unlock()
	go l.run(ctx, next)
}

func (l *Loader[K, V]) fetchAndDeliver(ctx context.Context, batch []*call[K, V]) {
	keys := make([]K, 0, len(batch))
	if len(batch) == 1 { // the idle case: nothing to deduplicate
		keys = append(keys, batch[0].key)
	} else {
		seen := make(map[K]struct{}, len(batch))
		for _, c := range batch {
			if _, dup := seen[c.key]; !dup {
				seen[c.key] = struct{}{}
				keys = append(keys, c.key)
			}
		}
	}
	values, err := l.safeFetch(ctx, keys)
	for _, c := range batch {
		if err != nil {
			c.done <- result[V]{err: err}
			continue
		}
		v, ok := values[c.key]
		c.done <- result[V]{v: v, found: ok}
	}
}

// errPanic wraps a panic of the fetch: every caller of the batch gets it as
// an error and the loader keeps working.
var errPanic = errors.New("coalesce: fetch panicked")

func (l *Loader[K, V]) safeFetch(ctx context.Context, keys []K) (values map[K]V, err error) {
	defer func() {
		if r := recover(); r != nil {
			values, err = nil, fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, l.opt.Timeout)
	defer cancel()
	return l.fetch(ctx, keys)
}
