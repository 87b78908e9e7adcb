package load_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventreg/eventreg/bench/internal/load"
	"github.com/eventreg/eventreg/bench/internal/procstat"
)

// requireWrk fails without wrk, except in -short runs, which may skip.
func requireWrk(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("wrk"); err != nil {
		const msg = "wrk is not on PATH: install wrk (Debian: apt-get install wrk); deploy/scripts/test.sh installs it"
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
}

// seen is what a test server saw, per connection (wrk's threads each keep
// their own connections).
type seen struct {
	mu     sync.Mutex
	byConn map[string][]http.Request
	bodies map[string]int // body -> count
}

// serveSeen starts a test server that answers 200 to every request and
// records it in the returned seen; it stops when the test ends.
func serveSeen(t *testing.T) (*seen, *httptest.Server) {
	s := &seen{byConn: map[string][]http.Request{}, bodies: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.byConn[r.RemoteAddr] = append(s.byConn[r.RemoteAddr], http.Request{Method: r.Method, URL: r.URL, Header: r.Header})
		s.bodies[string(b)]++
	}))
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *seen) total() int {
	n := 0
	for _, reqs := range s.byConn {
		n += len(reqs)
	}
	return n
}

// Tokens with everything a Lua script could trip on.
var awkwardTokens = []string{`Bearer a"b`, `Bearer ]]c[[`, `Bearer \d\\`, `Bearer e'f[==[`, `Bearer %q%s%d`, `Bearer é`}

// checkRotation asserts that each connection's requests carry the tokens in
// turn and returns where each connection started.
func checkRotation(t *testing.T, s *seen, tokens []string) []int {
	t.Helper()
	var starts []int
	for conn, reqs := range s.byConn {
		start := slices.Index(tokens, reqs[0].Header.Get("Authorization"))
		if start < 0 {
			t.Fatalf("%s: first Authorization %q is none of the tokens", conn, reqs[0].Header.Get("Authorization"))
		}
		for i, r := range reqs {
			if want := tokens[(start+i)%len(tokens)]; r.Header.Get("Authorization") != want {
				t.Fatalf("%s: request %d carries %q, want %q (the next in turn)", conn, i, r.Header.Get("Authorization"), want)
			}
		}
		starts = append(starts, start)
	}
	slices.Sort(starts)
	return starts
}

func TestWrkSendsEachTokenInTurnFromEachThreadsOffset(t *testing.T) {
	requireWrk(t)
	t.Parallel()
	s, srv := serveSeen(t)
	body := "{\"q\":\"a \\\"quoted\\\" ]] [[x]] \\\\ é\",\r\n\"n\":1}\x00"
	// Concurrency 2: two threads with one connection each.
	out, err := load.Run(context.Background(), load.Spec{Name: "t", Concurrency: 2, Duration: 400 * time.Millisecond,
		Request: &load.Request{Base: srv.URL, Method: http.MethodPost, Path: "/api/v0/users/search?x=1",
			Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body), Authorizations: awkwardTokens}})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byConn) != 2 {
		t.Fatalf("%d connections, want 2", len(s.byConn))
	}
	// Thread 0 starts at token 0 and thread 1 at token 3 (half-way); wrk
	// makes thread 0 build one request before the run to check its syntax,
	// so thread 0's first request sent is token 1.
	if starts := checkRotation(t, s, awkwardTokens); !slices.Equal(starts, []int{1, 3}) {
		t.Errorf("the connections started at tokens %v, want [1 3]", starts)
	}
	for conn, reqs := range s.byConn {
		for _, r := range reqs {
			if r.Method != http.MethodPost || r.URL.RequestURI() != "/api/v0/users/search?x=1" || r.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%s: %s %s %v", conn, r.Method, r.URL.RequestURI(), r.Header)
			}
		}
	}
	if len(s.bodies) != 1 || s.bodies[body] == 0 {
		t.Errorf("bodies seen: %q, want only %q", slices.Collect(maps.Keys(s.bodies)), body)
	}
	if d := int64(s.total()) - out.Requests; d < 0 || d > 2 {
		t.Errorf("wrk counted %d requests, the server %d", out.Requests, s.total())
	}
}

func TestWrkPicksIDsAtRandomFromTheRange(t *testing.T) {
	requireWrk(t)
	t.Parallel()
	s, srv := serveSeen(t)
	tokens := []string{"Bearer one", "Bearer two", "Bearer three"}
	_, err := load.Run(context.Background(), load.Spec{Name: "t", Concurrency: 2, Duration: 300 * time.Millisecond,
		Request: &load.Request{Base: srv.URL, Method: http.MethodGet, PathPrefix: "/api/v0/users/",
			IDs: load.IDRange{From: 10_000_001, Count: 5}, Authorizations: tokens}})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	checkRotation(t, s, tokens)
	var sequences []string
	ids := map[int64]int{}
	for conn, reqs := range s.byConn {
		var seq []string
		for _, r := range reqs {
			id, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/api/v0/users/"), 10, 64)
			if err != nil || id < 10_000_001 || id > 10_000_005 || r.Method != http.MethodGet {
				t.Fatalf("%s: %s %s, want GET of an id from 10000001 to 10000005", conn, r.Method, r.URL.Path)
			}
			ids[id]++
			seq = append(seq, r.URL.Path)
		}
		sequences = append(sequences, strings.Join(seq[:min(len(seq), 50)], " "))
	}
	if len(ids) != 5 {
		t.Errorf("ids seen %v, want all 5 of the range", ids)
	}
	if len(sequences) == 2 && sequences[0] == sequences[1] {
		t.Error("both threads sent the same ids in the same order: their random seeds should differ")
	}
}

// wrkChild reports whether a process named wrk runs as this process's child.
func wrkChild(t *testing.T) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if st, err := procstat.ParseStat(b); err == nil && st.Comm == "wrk" && st.PPID == os.Getpid() {
			return true
		}
	}
	return false
}

func TestWrkCountsRequestsErrorsAndLatencies(t *testing.T) {
	requireWrk(t)
	t.Parallel()
	var calls, failed, probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		probe := strings.HasPrefix(r.UserAgent(), "Go-http-client") // wrk sends no User-Agent
		if probe {
			probes.Add(1)
		}
		if n%20 == 5 { // a slow answer in twenty: wrk's correction must be undone
			time.Sleep(5 * time.Millisecond)
		}
		if n%10 == 0 {
			if !probe {
				failed.Add(1)
			}
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":"every tenth"}`)
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer srv.Close()

	const c = 4
	var ends atomic.Int32
	childAtEnd := false
	out, err := load.Run(context.Background(), load.Spec{Name: "t", Concurrency: c, Duration: time.Second,
		Request: &load.Request{Base: srv.URL, Method: http.MethodGet, Path: "/x", Authorizations: []string{"Bearer t"}},
		OnLoadEnd: func() {
			ends.Add(1)
			// The suite's last CPU snapshot is taken here: wrk must still
			// run, as this process's child, so that its CPU is charged to
			// the load generator.
			childAtEnd = wrkChild(t)
		}})
	if err != nil {
		t.Fatal(err)
	}
	served, fails := calls.Load()-probes.Load(), failed.Load()
	if p := probes.Load(); p < 1 || p > 10 {
		t.Errorf("%d probes after the run, want 1 to 10 (until one fails)", p)
	}
	// wrk stops with requests in flight: at most one per connection is
	// served but not counted.
	if d := served - out.Requests; d < 0 || d > c || out.Requests < 100 {
		t.Errorf("wrk counted %d requests, the server answered %d", out.Requests, served)
	}
	if d := fails - out.Errors; d < 0 || d > c || out.Errors == 0 {
		t.Errorf("wrk counted %d errors, the server failed %d", out.Errors, fails)
	}
	if out.Statuses["non-2xx/3xx"] != out.Errors || out.Statuses["2xx/3xx"] != out.Requests-out.Errors {
		t.Errorf("statuses %v for %d requests and %d errors", out.Statuses, out.Requests, out.Errors)
	}
	if out.Latencies.Count() != out.Requests {
		t.Errorf("%d latencies for %d requests", out.Latencies.Count(), out.Requests)
	}
	// 5% of the answers take 5 ms or more: p99 is one of them, p50 is not.
	if p50, p99 := out.Latencies.Quantile(50), out.Latencies.Quantile(99); p50 >= 5*time.Millisecond || p99 < 5*time.Millisecond {
		t.Errorf("p50 %s p99 %s, want p50 < 5 ms <= p99", p50, p99)
	}
	if !strings.Contains(out.FirstError, "500") || !strings.Contains(out.FirstError, "every tenth") {
		t.Errorf("first error %q should say what the probe got (500 and its body)", out.FirstError)
	}
	if out.Elapsed < 900*time.Millisecond || out.Elapsed > 1500*time.Millisecond {
		t.Errorf("elapsed %s, want about 1 s", out.Elapsed)
	}
	if ends.Load() != 1 || !childAtEnd {
		t.Errorf("OnLoadEnd called %d times, wrk running as a child then: %v; want once, while it runs", ends.Load(), childAtEnd)
	}
}

func TestWrkStopsWhenTheContextEnds(t *testing.T) {
	requireWrk(t)
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := load.Run(ctx, load.Spec{Name: "t", Concurrency: 1, Duration: time.Minute,
		Request: &load.Request{Base: srv.URL, Method: http.MethodGet, Path: "/"}})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %s: want the context's error, soon", err, time.Since(start))
	}
	if out.Requests == 0 {
		t.Error("the requests made before the end should be reported")
	}
}

func TestRunWantsARequestOrATargeter(t *testing.T) {
	if _, err := load.Run(context.Background(), load.Spec{Name: "t", Concurrency: 1, Duration: time.Second}); err == nil {
		t.Fatal("want an error")
	}
}
