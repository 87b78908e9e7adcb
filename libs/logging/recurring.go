package logging

import (
	"sync/atomic"
	"time"
)

// RecurringInterval is how often a Recurring failure is logged at most.
const RecurringInterval = time.Minute

// Recurring tells when a failure that repeats (a dependency down, a
// background poll failing) is due to be logged again: once, then at most
// once a RecurringInterval, however many goroutines report it. The zero
// value is ready.
type Recurring struct{ last atomic.Int64 } // unix nanoseconds of the last line

// Due reports whether the failure seen at now should be logged, and if so
// counts it as logged.
func (r *Recurring) Due(now time.Time) bool {
	last := r.last.Load()
	if last != 0 && now.UnixNano()-last < int64(RecurringInterval) {
		return false
	}
	return r.last.CompareAndSwap(last, now.UnixNano())
}
