package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// profiler captures a CPU profile of every service (PPROF_ENABLED on the
// ops listener) while one measurement runs, for -profile.
type profiler struct {
	dir      string            // where the profiles go
	internal map[string]string // service name -> ops base URL
}

// capture starts fetching a profile of each service lasting d; the returned
// function waits for them and writes <dir>/<name>-<service>.pprof.
func (p *profiler) capture(ctx context.Context, name string, d time.Duration) func() []error {
	if p == nil {
		return func() []error { return nil }
	}
	secs := max(int((d+time.Second-1)/time.Second), 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for svc, base := range p.internal {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.fetch(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs),
				filepath.Join(p.dir, name+"-"+svc+".pprof")); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("profile of %s during %s: %w", svc, name, err))
				mu.Unlock()
			}
		}()
	}
	return func() []error { wg.Wait(); return errs }
}

func (p *profiler) fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
