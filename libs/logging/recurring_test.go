package logging_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/logging"
)

func TestRecurringLogsOnceAMinute(t *testing.T) {
	var r logging.Recurring
	t0 := time.Unix(1_700_000_000, 0)
	if !r.Due(t0) {
		t.Fatal("the first failure is not logged")
	}
	if r.Due(t0.Add(59 * time.Second)) {
		t.Fatal("logged again within the minute")
	}
	if !r.Due(t0.Add(61 * time.Second)) {
		t.Fatal("not logged again after the minute")
	}

	var fresh logging.Recurring
	var logged atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if fresh.Due(t0) {
				logged.Add(1)
			}
		})
	}
	wg.Wait()
	if logged.Load() != 1 {
		t.Fatalf("%d of 16 goroutines reporting at once logged, want 1", logged.Load())
	}
}
