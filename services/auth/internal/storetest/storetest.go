// Package storetest is auth's store conformance suite: for each store
// interface a test function, parameterised by a constructor, that every
// implementation runs from its own package's tests (the Redis and
// PostgreSQL stores against real servers), and the in-memory stores that
// pass it, which grant's unit tests run on; and MemoryKeys, a signing key
// store in memory for the tests that sign without PostgreSQL.
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var ctx = context.Background()

// check fails t with want's diff from got, naming what.
func check[T any](t *testing.T, what string, got, want T, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, append(opts, cmpopts.EquateEmpty())...); d != "" {
		t.Fatalf("%s (-want +got):\n%s", what, d)
	}
}

// must fails t on err, naming what was being done.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// is fails t unless err is want.
func is(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

// outlive waits until d has passed, for a lifetime to end: an expiry is
// the clock's business, and no event says it happened.
func outlive(d time.Duration) { time.Sleep(d + d/2 + 20*time.Millisecond) }
