package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/e2e/stack"
)

// soakDuration is SOAK_DURATION (default 60s, what `make test` and CI run;
// the full run is SOAK_DURATION=10m).
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("SOAK_DURATION")
	if v == "" {
		return 60 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > time.Hour {
		t.Fatalf("SOAK_DURATION=%q: want a duration up to 1h, e.g. 10m", v)
	}
	return d
}

// soakKind is one kind of request of the mix.
type soakKind string

// soakStats are the answers of one kind.
type soakStats struct {
	latencies []time.Duration
	byStatus  map[int]int
	errors    int
}

// TestSoak runs a steady mix of token, read, search and role-change requests
// through the gateway for SOAK_DURATION, then requires zero 5xx and transport
// errors, flat memory of every service (RSS, second half against first) and
// role memberships that match the test's ledger, with no duplicates.
func TestSoak(t *testing.T) {
	duration := soakDuration(t)
	s := stack.Start(t, stack.Options{Env: map[string]string{"RATE_LIMIT_PER_SECOND": "2000", "LOG_LEVEL": "warn"}})
	tracker := serviceToken(t, s, trackerID, trackerSecret, "user:read", "user:roles:update", "volunteer:read", "registration:read")

	const (
		workers  = 4
		interval = 20 * time.Millisecond // per worker: ~200 requests a second in all
	)

	var mu sync.Mutex
	stats := map[soakKind]*soakStats{}
	record := func(k soakKind, r reply, err error) {
		mu.Lock()
		defer mu.Unlock()
		st := stats[k]
		if st == nil {
			st = &soakStats{byStatus: map[int]int{}}
			stats[k] = st
		}
		if err != nil {
			st.errors++
			return
		}
		st.byStatus[r.status]++
		st.latencies = append(st.latencies, r.took)
	}

	// Memory of each service, sampled once a second.
	rss := map[string][]int64{}
	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopSampler:
				return
			case <-tick.C:
				for name, svc := range s.Services {
					if kib, err := rssKiB(svc.PID()); err == nil {
						mu.Lock()
						rss[name] = append(rss[name], kib)
						mu.Unlock()
					}
				}
			}
		}
	}()

	// Role changes: one worker owns the ledger (role 3, hr, on four users).
	const role = "3"
	roleUsers := []int64{1001, 1002, 1003, 1004}
	held := rolesHeld(t, s, tracker, role, roleUsers)
	var ledgerErr error

	var mix []func(int) bool
	for w := range workers {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		mix = append(mix, func(i int) bool {
			<-tick.C
			switch {
			case w == 0 && i%2 == 0: // role change
				id := roleUsers[(i/2)%len(roleUsers)]
				method, path, body := roleChange(id, role, held[id])
				r, err := send(s, method, path, tracker, body)
				record("role change", r, err)
				if err == nil && r.status == 204 {
					held[id] = !held[id]
				} else if err == nil && r.status < 500 {
					mu.Lock()
					if ledgerErr == nil {
						ledgerErr = fmt.Errorf("%s: %d %s", path, r.status, r.body)
					}
					mu.Unlock()
				}
			case i%10 == 1: // token
				r, err := tokenRequest(s, trackerID, trackerSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {"user:read volunteer:read"}})
				record("token", r, err)
			case i%2 == 0: // read
				paths := []string{"/api/v0/users/1001", "/api/v0/users/1003/roles", "/api/v0/users/1002/volunteer", "/api/v0/users/1001/registration", "/api/v0/roles"}
				r, err := send(s, "GET", paths[(i/2+w)%len(paths)], tracker, "")
				record("read", r, err)
			default: // search
				paths := []string{"/api/v0/users/search", "/api/v0/volunteers/search", "/api/v0/registration/search"}
				r, err := send(s, "POST", paths[(i+w)%len(paths)], tracker, `{"limit": 50}`)
				record("search", r, err)
			}
			return true
		})
	}
	startWorkers(0, time.Now().Add(duration), mix...).wait()
	close(stopSampler)
	<-samplerDone

	// Zero 5xx, zero transport errors.
	total := 0
	for _, k := range []soakKind{"token", "read", "search", "role change"} {
		st := stats[k]
		if st == nil {
			t.Fatalf("no %s requests ran", k)
		}
		slices.Sort(st.latencies)
		n := len(st.latencies)
		total += n + st.errors
		t.Logf("%-11s %6d answers %v, %d transport errors, p50 %v p99 %v max %v", k, n, st.byStatus, st.errors,
			st.latencies[n/2].Round(time.Millisecond/10), st.latencies[n*99/100].Round(time.Millisecond/10), st.latencies[n-1].Round(time.Millisecond/10))
		for status, c := range st.byStatus {
			if status >= 500 {
				t.Errorf("%s: %d answers with status %d", k, c, status)
			}
		}
		if st.errors > 0 {
			t.Errorf("%s: %d transport errors", k, st.errors)
		}
	}
	t.Logf("%d requests in %v (%.0f/s)", total, duration, float64(total)/duration.Seconds())
	if ledgerErr != nil {
		t.Errorf("a role change the ledger did not expect: %v", ledgerErr)
	}

	// Flat memory: the mean RSS of the second half is within 20% (+8 MiB) of
	// the first half's, after a 10% warm-up.
	for name, samples := range rss {
		if len(samples) < 10 {
			t.Errorf("%s: only %d memory samples", name, len(samples))
			continue
		}
		samples = samples[len(samples)/10:]
		first, second := mean(samples[:len(samples)/2]), mean(samples[len(samples)/2:])
		t.Logf("%-13s RSS first half %6.1f MiB, second half %6.1f MiB (%+.1f%%), max %6.1f MiB", name, first/1024, second/1024,
			100*(second-first)/first, float64(slices.Max(samples))/1024)
		if second > first*1.2+8*1024 {
			t.Errorf("%s: memory grew from %.1f to %.1f MiB", name, first/1024, second/1024)
		}
	}

	// Consistency: memberships match the ledger, none duplicated.
	checkMemberships(t, s, role, held)
	conn, err := pgx.Connect(context.Background(), s.DatabaseURL("users"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var dups int
	if err := conn.QueryRow(context.Background(),
		"SELECT count(*) FROM (SELECT user_id, role_id FROM role_members GROUP BY 1, 2 HAVING count(*) > 1) d").Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Fatalf("%d duplicated role memberships", dups)
	}
}

func mean(xs []int64) float64 {
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	return sum / float64(len(xs))
}

// rssKiB reads VmRSS of pid from /proc.
func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}
