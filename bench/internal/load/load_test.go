package load_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/eventreg/eventreg/bench/internal/load"
)

func TestQuantilesOfAKnownDistribution(t *testing.T) {
	l := load.NewLatencies()
	for i := 1; i <= 10000; i++ { // 0.1 ms ... 1000 ms in steps of 0.1 ms
		l.Record(time.Duration(i) * 100 * time.Microsecond)
	}
	cases := []struct {
		q    float64
		want time.Duration
	}{{50, 500 * time.Millisecond}, {99, 990 * time.Millisecond}, {99.9, 999 * time.Millisecond}, {100, 1000 * time.Millisecond}}
	for _, c := range cases {
		got := l.Quantile(c.q)
		if diff := got - c.want; diff < -c.want/500 || diff > c.want/500 { // 3 significant digits
			t.Errorf("p%g = %s, want %s ± 0.2%%", c.q, got, c.want)
		}
	}
	if l.Count() != 10000 {
		t.Errorf("count %d, want 10000", l.Count())
	}
	if l.Max() < 999*time.Millisecond {
		t.Errorf("max %s", l.Max())
	}
}

func TestEmptyHistogramIsZero(t *testing.T) {
	l := load.NewLatencies()
	if l.Quantile(99) != 0 || l.Max() != 0 {
		t.Fatal("an empty histogram should report zero")
	}
}

func TestOutOfRangeLatenciesAreClamped(t *testing.T) {
	l := load.NewLatencies()
	l.Record(0)
	l.Record(2 * time.Hour)
	if l.Count() != 2 {
		t.Fatalf("count %d, want 2", l.Count())
	}
	if l.Max() > time.Minute+time.Minute/100 {
		t.Fatalf("max %s beyond the range", l.Max())
	}
}

func TestRunKeepsConcurrencyAndCountsNon2xxAsErrors(t *testing.T) {
	var inFlight, peak, calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if calls.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	out, err := load.Run(context.Background(), load.Spec{Name: "t", Concurrency: 4, Duration: 300 * time.Millisecond,
		Targeter: vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: srv.URL})})
	if err != nil {
		t.Fatal(err)
	}
	if out.Requests == 0 || out.Requests != calls.Load() {
		t.Fatalf("requests %d, server saw %d", out.Requests, calls.Load())
	}
	if peak.Load() > 4 {
		t.Errorf("%d requests in flight at once, want at most 4 (closed model)", peak.Load())
	}
	if out.Errors != out.Statuses["409"] || out.Errors == 0 {
		t.Errorf("errors %d, 409s %d: every non-2xx must count", out.Errors, out.Statuses["409"])
	}
	if out.FirstError == "" {
		t.Error("the first error should be described")
	}
	if out.RPS() <= 0 || out.Latencies.Count() != out.Requests {
		t.Errorf("rps %.1f, %d latencies for %d requests", out.RPS(), out.Latencies.Count(), out.Requests)
	}
}

func TestRunEndsWhenTargetsRunOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	left := atomic.Int64{}
	left.Store(25)
	tr := func(tgt *vegeta.Target) error {
		if left.Add(-1) < 0 {
			return vegeta.ErrNoTargets
		}
		tgt.Method, tgt.URL = "GET", srv.URL
		return nil
	}
	out, err := load.Run(context.Background(), load.Spec{Name: "t", Concurrency: 2, Duration: 10 * time.Second, Targeter: tr})
	if err != nil {
		t.Fatal(err)
	}
	if out.Requests != 25 || out.Errors != 0 || out.FirstError != "" {
		t.Fatalf("requests %d errors %d (%s), want 25 and 0", out.Requests, out.Errors, out.FirstError)
	}
	if out.Elapsed > 5*time.Second {
		t.Fatalf("took %s: the run should end when the targets run out", out.Elapsed)
	}
}

func TestMergeAddsSlicesOfOneMeasurement(t *testing.T) {
	a := load.Outcome{Requests: 100, Errors: 1, Statuses: map[string]int64{"200": 99, "503": 1}, FirstError: "503 once",
		Elapsed: time.Second, Latencies: load.NewLatencies()}
	b := load.Outcome{Requests: 300, Statuses: map[string]int64{"200": 300}, Elapsed: time.Second, Latencies: load.NewLatencies()}
	for range 100 {
		a.Latencies.Record(10 * time.Millisecond)
	}
	for range 300 {
		b.Latencies.Record(time.Millisecond)
	}
	m := load.Merge(load.Outcome{}, load.Merge(a, b))
	if m.Requests != 400 || m.Errors != 1 || m.Statuses["200"] != 399 || m.FirstError != "503 once" || m.Elapsed != 2*time.Second {
		t.Fatalf("merged %+v", m)
	}
	if m.RPS() != 200 {
		t.Fatalf("rps %v, want 200 (400 requests in 2 s)", m.RPS())
	}
	if m.Latencies.Count() != 400 || m.Latencies.Quantile(50) > 2*time.Millisecond || m.Latencies.Quantile(90) < 9*time.Millisecond {
		t.Fatalf("merged latencies: count %d p50 %s p90 %s", m.Latencies.Count(), m.Latencies.Quantile(50), m.Latencies.Quantile(90))
	}
}
