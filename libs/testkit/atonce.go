package testkit

import "sync"

// AtOnce runs fn(0) … fn(n-1) on n goroutines released together, so that
// they race for whatever fn contends for, and returns when all have ended.
func AtOnce(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// CountAtOnce is AtOnce of fn: it counts the calls that succeed and
// collects the errors of the others.
func CountAtOnce(n int, fn func() error) (ok int, errs []error) {
	var mu sync.Mutex
	AtOnce(n, func(int) {
		err := fn()
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			ok++
		} else {
			errs = append(errs, err)
		}
	})
	return ok, errs
}
