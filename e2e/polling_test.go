package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

// eventually polls check until it returns nil or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	err := testkit.Poll(context.Background(), timeout, func(context.Context) error { return check() })
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}

// want returns a check of an answer: an error unless it has status.
func want(status int) func(reply, error) error {
	return func(r reply, err error) error {
		if err != nil {
			return err
		}
		if r.status != status {
			return fmt.Errorf("status %d (want %d): %.300s", r.status, status, r.body)
		}
		return nil
	}
}

// readinessPolls GETs a service's ops /readyz at an interval, as a
// readiness probe would, counting polls and keeping every answer but a 200.
type readinessPolls struct {
	polls  atomic.Int64
	mu     sync.Mutex
	failed []string
	*workers
}

func startReadinessPolls(opsURL string, every time.Duration) *readinessPolls {
	p := &readinessPolls{}
	p.workers = startWorkers(every, time.Time{}, func(int) bool {
		p.polls.Add(1)
		if bad := readyzOnce(opsURL); bad != "" {
			p.mu.Lock()
			p.failed = append(p.failed, bad)
			p.mu.Unlock()
		}
		return true
	})
	return p
}

func (p *readinessPolls) failures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.failed...)
}

// readyzOnce asks /readyz once: "" for a 200, else what came back.
func readyzOnce(opsURL string) string {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(opsURL + "/readyz")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return ""
}
