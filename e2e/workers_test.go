package e2e

import (
	"sync"
	"time"
)

// workers are goroutines that each call their function again and again, with
// the number of the call, until stop is called, the function returns false,
// or the deadline passes: the load loops of the reliability tests.
type workers struct {
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// startWorkers starts a goroutine per fn; each waits every after a call
// (0: not at all). A zero until sets no deadline.
func startWorkers(every time.Duration, until time.Time, fns ...func(i int) bool) *workers {
	w := &workers{done: make(chan struct{})}
	for _, fn := range fns {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for i := 0; until.IsZero() || time.Now().Before(until); i++ {
				select {
				case <-w.done:
					return
				default:
				}
				if !fn(i) {
					return
				}
				if every > 0 {
					select {
					case <-w.done:
						return
					case <-time.After(every):
					}
				}
			}
		}()
	}
	return w
}

// stop ends the workers and waits for them; it may be called more than once.
func (w *workers) stop() {
	w.stopOnce.Do(func() { close(w.done) })
	w.wg.Wait()
}

// wait waits until every worker has ended by itself.
func (w *workers) wait() { w.wg.Wait() }
