package report_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/bench/internal/report"
)

func sample() *report.Report {
	r := &report.Report{StartedAt: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC), Scale: "small",
		Machine:  report.Machine{CPUModel: "Test CPU", Cores: 2, MemoryBytes: 8 << 30, Kernel: "6.1", GoVersion: "go1.26"},
		Settings: report.Settings{DurationSeconds: 10, Concurrency: []int{16, 64}, Gateway: "nginx"},
		PgBench:  []report.PgBench{{Clients: 16, Threads: 2, DurationSeconds: 10, ScaleFactor: 10, TPS: 20000}},
		Micro:    []report.Micro{{Package: "libs/tokenauth", Name: "ValidateCached", NsPerOp: 80}},
		PeakRSS:  map[string]int64{"auth": 40 << 20, "users": 120 << 20, "volunteers": 30 << 20, "registrations": 35 << 20},
	}
	add := func(name string, c int, rps, p99 float64, errs int64) {
		r.Scenarios = append(r.Scenarios, report.Scenario{Name: name, Request: "X", Concurrency: c, Requests: int64(rps * 10), Errors: errs,
			Statuses: map[string]int64{"200": int64(rps*10) - errs, "503": errs}, RPS: rps, P50Millis: p99 / 4, P99Millis: p99, P999Millis: p99 * 2})
	}
	add(report.ClientCredentials, 64, 5200, 20, 0)
	r.Scenarios[0].CPUCores = map[string]float64{"auth": 0.9, "nginx": 0.5, "load generator": 0.4, "machine busy": 1.95}
	add(report.UserByID, 16, 9000, 5, 0)
	add(report.UsersSearchFirst, 16, 1000, 30, 0)
	add(report.UsersSearchDeep, 16, 900, 31, 0) // 1.11x: within 1.2x
	add(report.RegistrationsFirst, 16, 500, 50, 0)
	add(report.RegistrationsDeep, 16, 400, 60, 3) // 1.25x and errors
	return r
}

// containsAll fails t for each of wants that md lacks.
func containsAll(t *testing.T, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func find(t *testing.T, r *report.Report, prefix string) report.Check {
	t.Helper()
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, prefix) {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", prefix, r.Checks)
	return report.Check{}
}

func TestEvaluatePutsEachFigureBesideItsTarget(t *testing.T) {
	r := sample()
	r.Evaluate(report.DefaultTargets())
	cases := []struct {
		check  string
		status report.Status
		value  string
	}{
		{"client-credentials tokens/s at concurrency 64", report.Pass, "5200/s"},
		{"client-credentials p99 at concurrency 64", report.Pass, "20.00 ms"},
		{"GET /api/v0/users/:id req/s vs pgbench", report.Miss, "45%"}, // 9000 req/s is under half of 20000 tps
		{"token validation, token seen before", report.Pass, "0.08 µs"},
		{"users search, page at depth vs first page (concurrency 16)", report.Pass, "1.11x"},
		{"users search, page at depth vs first page (concurrency 64)", report.NotRun, "not measured"},
		{"registrations search, last page vs first page (concurrency 16)", report.Miss, "1.25x"},
		{"peak RSS of users", report.Miss, "120.0 MiB"},
		{"peak RSS of auth", report.Pass, "40.0 MiB"},
		{"errors in every scenario", report.Miss, "registrations-search-deep@16: 3"},
	}
	for _, c := range cases {
		t.Run(c.check, func(t *testing.T) {
			got := find(t, r, c.check)
			if got.Status != c.status || got.Value != c.value {
				t.Fatalf("got %s %q, want %s %q", got.Status, got.Value, c.status, c.value)
			}
		})
	}
}

func TestDepthRatioIsTheCostOfTheDeepPage(t *testing.T) {
	first := report.Scenario{RPS: 1200}
	deep := report.Scenario{RPS: 1000}
	if got := report.DepthRatio(first, deep); got != 1.2 {
		t.Fatalf("got %v, want 1.2", got)
	}
	if got := report.DepthRatio(first, report.Scenario{}); got != 0 {
		t.Fatalf("a missing measurement gives %v, want 0", got)
	}
}

func TestMarkdownShowsTargetsScenariosAndMachine(t *testing.T) {
	r := sample()
	r.Evaluate(report.DefaultTargets())
	containsAll(t, r.Markdown(),
		"Test CPU, 2 cores, 8192.0 MiB memory",
		"| client-credentials tokens/s at concurrency 64 | >= 5000/s | 5200/s | **PASS** |",
		"| token-client-credentials | `X` | 64 | 5200 | 5.00 | 20.00 | 40.00 | 52000 | 0 |",
		"**3** (200×3997, 503×3)",
		"| 16 | 2 | **20000** | 10 s | 1 |",
		"| libs/tokenauth | ValidateCached | 80 |",
		"| users | 120.0 MiB |",
		"| scenario | conc. | auth | load generator | nginx | total | machine busy |",
		"| token-client-credentials | 64 | 0.90 | 0.40 | 0.50 | 1.80 | 1.95 |",
	)
}

func TestJSONRoundTrips(t *testing.T) {
	r := sample()
	r.Evaluate(report.DefaultTargets())
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Scenarios) != len(r.Scenarios) || len(back.Checks) != len(r.Checks) || len(back.PgBench) != 1 || back.PgBench[0].TPS != 20000 {
		t.Fatalf("lost data in JSON: %s", b)
	}
	if !strings.Contains(string(b), `"requestsPerSecond": 5200`) {
		t.Fatalf("field names changed: %s", b)
	}
}

func TestFormatting(t *testing.T) {
	cases := map[string]string{report.Millis(0): "-", report.Millis(0.1234): "0.123", report.Millis(12.345): "12.35", report.Millis(1234.4): "1234",
		report.Rate(5234.6): "5235", report.Rate(12.34): "12.3", report.MiB(100 << 20): "100.0 MiB"}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestMarkdownSaysHowTheBaselineWasMeasured(t *testing.T) {
	r := sample()
	if md := r.Markdown(); !strings.Contains(md, "| 16 | 2 | **20000** | 10 s | 1 |") || strings.Contains(md, "bracketing") {
		t.Fatalf("a baseline run on its own:\n%s", md)
	}
	r.PgBench[0].Brackets, r.PgBench[0].Runs = report.UserByID, 2
	r.PgBench = append(r.PgBench, report.PgBench{Clients: 64, Error: "pgbench -S: exit status 1\nconnection refused"})
	containsAll(t, r.Markdown(), "the mean of the runs bracketing users-get", "| 16 | 2 | **20000** | 10 s | 2 |", "| 64 | 0 | failed: pgbench -S: exit status 1 |")
}

func TestReadsAreComparedAtEachConcurrencyAndBestAgainstBest(t *testing.T) {
	r := sample()
	r.Scenarios = append(r.Scenarios, report.Scenario{Name: report.UserByID, Concurrency: 64, Requests: 110000, RPS: 11000})
	r.PgBench = append(r.PgBench, report.PgBench{Clients: 64, Threads: 2, TPS: 14000})
	r.Evaluate(report.DefaultTargets())
	cases := []struct {
		check  string
		status report.Status
		value  string
		detail string
	}{
		{"GET /api/v0/users/:id req/s vs pgbench -S tps (concurrency 16)", report.Miss, "45%", "9000/s vs 20000 tps"},
		{"GET /api/v0/users/:id req/s vs pgbench -S tps (concurrency 64)", report.Pass, "79%", "11000/s vs 14000 tps"},
		// The strictest reading: our best level against pgbench's best.
		{"GET /api/v0/users/:id best req/s vs pgbench -S best tps", report.Pass, "55%", "11000/s at concurrency 64 vs 20000 tps with 16 clients"},
	}
	for _, c := range cases {
		got := find(t, r, c.check)
		if got.Status != c.status || got.Value != c.value || got.Detail != c.detail {
			t.Errorf("%s: got %s %q %q, want %s %q %q", c.check, got.Status, got.Value, got.Detail, c.status, c.value, c.detail)
		}
	}

	r.Scenarios[len(r.Scenarios)-1].RPS = 9500 // best now 9500 of 20000: under half
	r.Evaluate(report.DefaultTargets())
	if got := find(t, r, "GET /api/v0/users/:id best"); got.Status != report.Miss || got.Value != "48%" {
		t.Errorf("best vs best: got %s %q, want a miss at 48%%", got.Status, got.Value)
	}

	r.PgBench = r.PgBench[:1] // no baseline at 64: that level is not compared, nor best with best
	r.Evaluate(report.DefaultTargets())
	if got := find(t, r, "GET /api/v0/users/:id req/s vs pgbench -S tps (concurrency 64)"); got.Status != report.NotRun {
		t.Errorf("no baseline at 64: got %s %q", got.Status, got.Value)
	}
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, "GET /api/v0/users/:id best") {
			t.Errorf("best vs best with one level compared: %+v", c)
		}
	}
}

func TestCPUTableShowsEachProbeWhenMeasured(t *testing.T) {
	r := sample()
	if md := r.Markdown(); strings.Contains(md, "probe ms") || strings.Contains(md, "loopback µs") {
		t.Fatalf("a run without probes shows their columns:\n%s", md)
	}
	r.Scenarios[0].ProbeMillis = 41.96
	md := r.Markdown()
	containsAll(t, md,
		"| scenario | conc. | auth | load generator | nginx | total | machine busy | probe ms |\n",
		"|---|---:|---:|---:|---:|---:|---:|---:|\n",
		"| token-client-credentials | 64 | 0.90 | 0.40 | 0.50 | 1.80 | 1.95 | 42.0 |\n",
		"`probe ms`: the time a fixed single-core workload",
	)
	if strings.Contains(md, "loopback µs") {
		t.Fatalf("a run without loopback probes shows the column:\n%s", md)
	}
	r.Scenarios[0].LoopbackMicros = 23.44
	containsAll(t, r.Markdown(),
		"| scenario | conc. | auth | load generator | nginx | total | machine busy | probe ms | loopback µs |\n",
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
		"| token-client-credentials | 64 | 0.90 | 0.40 | 0.50 | 1.80 | 1.95 | 42.0 | 23.4 |\n",
		"`loopback µs`: one round trip of 64 bytes over loopback TCP",
	)
	var back report.Report
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || back.Scenarios[0].ProbeMillis != 41.96 || back.Scenarios[0].LoopbackMicros != 23.44 {
		t.Fatalf("probes lost in JSON: %v %+v", err, back.Scenarios[0])
	}
}
