// Package report holds the benchmark suite's results, checks them against the targets and renders them as JSON and Markdown.
package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is everything one run of the suite measured.
type Report struct {
	StartedAt   time.Time        `json:"startedAt"`
	FinishedAt  time.Time        `json:"finishedAt"`
	Scale       string           `json:"scale"`
	Dataset     Dataset          `json:"dataset"`
	Machine     Machine          `json:"machine"`
	Settings    Settings         `json:"settings"`
	Scenarios   []Scenario       `json:"scenarios"`
	PgBench     []PgBench        `json:"pgbenchBaselines,omitempty"` // one per concurrency level
	Micro       []Micro          `json:"microBenchmarks,omitempty"`
	Webhooks    *Webhooks        `json:"webhooks,omitempty"`
	PeakRSS     map[string]int64 `json:"peakRssBytes"` // VmHWM of each process at the end of the run
	Checks      []Check          `json:"checks"`
	Notes       []string         `json:"notes,omitempty"`
	GitRevision string           `json:"gitRevision,omitempty"`
}

// Webhooks is the webhook measurement: a burst of changes committed in one
// import drained to a receiver (events/s), and single changes one at a time
// (latency from the change's transaction to the receiver's 2xx).
type Webhooks struct {
	BurstEvents         int     `json:"burstEvents"`
	BurstSeconds        float64 `json:"burstSeconds"` // from the import's commit to the last receipt
	EventsPerSecond     float64 `json:"eventsPerSecond"`
	SingleEvents        int     `json:"singleEvents"`
	SingleP50Millis     float64 `json:"singleP50Millis"`
	SingleP99Millis     float64 `json:"singleP99Millis"`
	SingleMaxMillis     float64 `json:"singleMaxMillis"`
	DuplicateDeliveries int     `json:"duplicateDeliveries"`
	Error               string  `json:"error,omitempty"`
}

// Dataset says how much data the services held.
type Dataset struct {
	Users         int64 `json:"users"`
	Roles         int64 `json:"roles"`
	Registrations int64 `json:"registrations"`
	Volunteers    int64 `json:"volunteers"`
}

// Machine describes where the suite ran.
type Machine struct {
	CPUModel    string `json:"cpuModel"`
	Cores       int    `json:"cores"`
	MemoryBytes int64  `json:"memoryBytes"`
	Kernel      string `json:"kernel"`
	GoVersion   string `json:"goVersion"`
	OS          string `json:"os"`
}

// Settings are the knobs of the run.
type Settings struct {
	DurationSeconds float64 `json:"durationSeconds"`
	Concurrency     []int   `json:"concurrency"`
	Filter          string  `json:"filter,omitempty"`
	Gateway         string  `json:"gateway"`
}

// Scenario is one scenario at one concurrency.
type Scenario struct {
	Name            string           `json:"name"`
	Request         string           `json:"request"`
	Concurrency     int              `json:"concurrency"`
	Requests        int64            `json:"requests"`
	Errors          int64            `json:"errors"` // every non-2xx answer and transport error
	Statuses        map[string]int64 `json:"statuses,omitempty"`
	FirstError      string           `json:"firstError,omitempty"`
	DurationSeconds float64          `json:"durationSeconds"`
	RPS             float64          `json:"requestsPerSecond"`
	P50Millis       float64          `json:"p50Ms"`
	P99Millis       float64          `json:"p99Ms"`
	P999Millis      float64          `json:"p999Ms"`
	MaxMillis       float64          `json:"maxMs"`
	PeakRSS         map[string]int64 `json:"peakRssBytes,omitempty"` // highest VmRSS sampled during the scenario
	// CPUCores is the average number of cores each process group used during
	// the measurement ("other" is everything else on the machine).
	CPUCores map[string]float64 `json:"cpuCores,omitempty"`
	// ProbeMillis is machine.Probe's time (a fixed single-core workload,
	// services idle), the mean of just before and just after the
	// measurement: it rises when the host gives this machine less CPU.
	ProbeMillis float64 `json:"probeMs,omitempty"`
	// LoopbackMicros is machine.LoopbackProbe's time per round trip over
	// loopback TCP (services idle), the mean of just before and just after:
	// it rises when system calls and wake-ups get dearer.
	LoopbackMicros float64 `json:"loopbackUs,omitempty"`
	Skipped        string  `json:"skipped,omitempty"`
}

// PgBench is the `pgbench -S` baseline of the same run at one number of
// clients.
type PgBench struct {
	Clients         int     `json:"clients"`
	Threads         int     `json:"threads"`
	DurationSeconds int     `json:"durationSeconds"`
	ScaleFactor     int     `json:"scaleFactor"`
	TPS             float64 `json:"tps"`
	// Brackets names the scenario the baseline was measured just before and
	// after ("" when it ran once, on its own); Runs is how many measured
	// pgbench runs make the figure.
	Brackets string `json:"brackets,omitempty"`
	Runs     int    `json:"runs,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Baseline returns the pgbench baseline measured with clients clients.
func (r *Report) Baseline(clients int) (PgBench, bool) {
	for _, b := range r.PgBench {
		if b.Clients == clients {
			return b, true
		}
	}
	return PgBench{}, false
}

// FirstLine is s up to its first line break (an error's headline).
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Micro is one `go test -bench` result.
type Micro struct {
	Package     string  `json:"package"`
	Name        string  `json:"name"`
	NsPerOp     float64 `json:"nsPerOp"`
	BytesPerOp  int64   `json:"bytesPerOp"`
	AllocsPerOp int64   `json:"allocsPerOp"`
}

// Status of a check.
type Status string

// The outcomes of a check.
const (
	Pass   Status = "PASS"
	Miss   Status = "MISS"
	NotRun Status = "N/A"
)

// Check is one figure beside its target.
type Check struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	Value  string `json:"value"`
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Find returns the scenario called name at concurrency c.
func (r *Report) Find(name string, c int) (Scenario, bool) {
	for _, s := range r.Scenarios {
		if s.Name == name && s.Concurrency == c && s.Skipped == "" {
			return s, true
		}
	}
	return Scenario{}, false
}

// FindMicro returns the micro-benchmark whose name is name (without the
// "Benchmark" prefix and the -N CPU suffix).
func (r *Report) FindMicro(name string) (Micro, bool) {
	for _, m := range r.Micro {
		if m.Name == name {
			return m, true
		}
	}
	return Micro{}, false
}

// JSON renders r indented.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the report: %w", err)
	}
	return append(b, '\n'), nil
}

// MiB formats bytes as mebibytes with one decimal.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// Millis formats a duration in milliseconds for a table.
func Millis(ms float64) string {
	switch {
	case ms == 0:
		return "-"
	case ms < 1:
		return fmt.Sprintf("%.3f", ms)
	case ms < 100:
		return fmt.Sprintf("%.2f", ms)
	default:
		return fmt.Sprintf("%.0f", ms)
	}
}

// Rate formats requests per second.
func Rate(rps float64) string {
	if rps >= 100 {
		return fmt.Sprintf("%.0f", rps)
	}
	return fmt.Sprintf("%.1f", rps)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Markdown renders r as the human report: machine, checks, scenario table,
// baseline, micro-benchmarks and memory.
func (r *Report) Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Benchmark report %s\n\n", r.StartedAt.UTC().Format("2006-01-02 15:04 MST"))
	w("Scale **%s**: %d users, %d roles, %d registrations, %d volunteers. %gs per scenario and concurrency, through the nginx gateway (%s).\n\n",
		r.Scale, r.Dataset.Users, r.Dataset.Roles, r.Dataset.Registrations, r.Dataset.Volunteers, r.Settings.DurationSeconds, r.Settings.Gateway)
	w("Machine: %s, %d cores, %s memory, Linux %s, %s", r.Machine.CPUModel, r.Machine.Cores, MiB(r.Machine.MemoryBytes), r.Machine.Kernel, r.Machine.GoVersion)
	if r.GitRevision != "" {
		w(", tree %s", r.GitRevision)
	}
	w(". The load generator, nginx, PostgreSQL, Redis and every service share these cores.\n\n")

	w("## Targets\n\n| check | target | measured | |\n|---|---|---|---|\n")
	for _, c := range r.Checks {
		v := c.Value
		if c.Detail != "" {
			v += " (" + c.Detail + ")"
		}
		w("| %s | %s | %s | **%s** |\n", c.Name, c.Target, v, c.Status)
	}

	w("\n## Scenarios\n\n| scenario | request | conc. | req/s | p50 ms | p99 ms | p99.9 ms | requests | errors | peak RSS |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.Scenarios {
		if s.Skipped != "" {
			w("| %s | `%s` | %d | skipped: %s | | | | | | |\n", s.Name, s.Request, s.Concurrency, s.Skipped)
			continue
		}
		var rss []string
		for _, k := range sortedKeys(s.PeakRSS) {
			rss = append(rss, fmt.Sprintf("%s %.0f", k, float64(s.PeakRSS[k])/(1<<20)))
		}
		errs := fmt.Sprint(s.Errors)
		if s.Errors > 0 {
			var st []string
			for _, k := range sortedKeys(s.Statuses) {
				st = append(st, fmt.Sprintf("%s×%d", k, s.Statuses[k]))
			}
			errs = fmt.Sprintf("**%d** (%s)", s.Errors, strings.Join(st, ", "))
		}
		w("| %s | `%s` | %d | %s | %s | %s | %s | %d | %s | %s MiB |\n", s.Name, s.Request, s.Concurrency, Rate(s.RPS),
			Millis(s.P50Millis), Millis(s.P99Millis), Millis(s.P999Millis), s.Requests, errs, strings.Join(rss, ", "))
	}

	r.cpuTable(w)
	if len(r.PgBench) > 0 {
		w("\n## Baseline\n\n")
		w("`pgbench -S -P 1` (scale %d) against the same PostgreSQL, its steady rate measured after 15 s of warm-up in each run (a new pgbench's connections start at half speed)",
			r.PgBench[0].ScaleFactor)
		if r.PgBench[0].Brackets != "" {
			w("; at each concurrency the mean of the runs bracketing %s (just before and just after it), so that a change in the machine's speed during the run weighs on both alike",
				r.PgBench[0].Brackets)
		}
		w(".\n\n| clients (-c) | threads (-j) | tps | measured | runs |\n|---:|---:|---:|---:|---:|\n")
		for _, b := range r.PgBench {
			if b.Error != "" {
				w("| %d | %d | failed: %s | | |\n", b.Clients, b.Threads, FirstLine(b.Error))
				continue
			}
			w("| %d | %d | **%s** | %d s | %d |\n", b.Clients, b.Threads, Rate(b.TPS), b.DurationSeconds, max(b.Runs, 1))
		}
	}
	if wh := r.Webhooks; wh != nil {
		w("\n## Webhooks\n\n")
		if wh.Error != "" {
			w("failed: %s\n", FirstLine(wh.Error))
		} else {
			w("| measurement | events | figure |\n|---|---:|---|\n")
			w("| burst: one import's changes, commit to last receipt | %d | %.1f s, **%s events/s** |\n", wh.BurstEvents, wh.BurstSeconds, Rate(wh.EventsPerSecond))
			w("| single changes one at a time, change to receipt | %d | p50 %s ms, **p99 %s ms**, max %s ms |\n", wh.SingleEvents,
				Millis(wh.SingleP50Millis), Millis(wh.SingleP99Millis), Millis(wh.SingleMaxMillis))
			w("| deliveries received twice | | %d |\n", wh.DuplicateDeliveries)
		}
	}
	if len(r.Micro) > 0 {
		w("\n## Micro-benchmarks (`go test -bench`)\n\n| package | benchmark | ns/op | B/op | allocs/op |\n|---|---|---:|---:|---:|\n")
		for _, m := range r.Micro {
			w("| %s | %s | %.0f | %d | %d |\n", m.Package, m.Name, m.NsPerOp, m.BytesPerOp, m.AllocsPerOp)
		}
	}
	if len(r.PeakRSS) > 0 {
		w("\n## Peak memory over the whole run (VmHWM)\n\n| process | peak RSS |\n|---|---:|\n")
		for _, k := range sortedKeys(r.PeakRSS) {
			w("| %s | %s |\n", k, MiB(r.PeakRSS[k]))
		}
	}
	if len(r.Notes) > 0 {
		w("\n## Notes\n\n")
		for _, n := range r.Notes {
			w("- %s\n", n)
		}
	}
	return b.String()
}

// cpuTable shows where the CPU went in each measurement.
func (r *Report) cpuTable(w func(string, ...any)) {
	groups := map[string]bool{}
	for _, s := range r.Scenarios {
		for g := range s.CPUCores {
			groups[g] = true
		}
	}
	if len(groups) == 0 {
		return
	}
	// The machine's busy time is not a process group: it goes last, beside
	// the total of the groups, so that the gap (work this program cannot
	// see, e.g. other containers) shows.
	_, machine := groups[machineBusy]
	delete(groups, machineBusy)
	names := sortedKeys(groups)
	// The host probes go last, each only when the run measured it.
	var probes []probeColumn
	for _, p := range probeColumns {
		if slices.ContainsFunc(r.Scenarios, func(s Scenario) bool { return p.value(s) > 0 }) {
			probes = append(probes, p)
		}
	}
	w("\n## CPU used during each measurement (cores, of %d)\n\n", r.Machine.Cores)
	for _, p := range probes {
		w("%s\n\n", p.legend)
	}
	w("| scenario | conc. |")
	for _, n := range names {
		w(" %s |", n)
	}
	w(" total |")
	if machine {
		w(" machine busy |")
	}
	for _, p := range probes {
		w(" %s |", p.head)
	}
	w("\n|---|---:|")
	for range len(names) + 1 + len(probes) {
		w("---:|")
	}
	if machine {
		w("---:|")
	}
	w("\n")
	for _, s := range r.Scenarios {
		if s.Skipped != "" || len(s.CPUCores) == 0 {
			continue
		}
		w("| %s | %d |", s.Name, s.Concurrency)
		total := 0.0
		for _, n := range names {
			total += s.CPUCores[n]
			w(" %.2f |", s.CPUCores[n])
		}
		w(" %.2f |", total)
		if machine {
			w(" %.2f |", s.CPUCores[machineBusy])
		}
		for _, p := range probes {
			w(" %.1f |", p.value(s))
		}
		w("\n")
	}
}

// probeColumn is a host probe shown in the CPU table: its header, the
// sentence above the table that explains it, and its figure per scenario.
type probeColumn struct {
	head, legend string
	value        func(Scenario) float64
}

var probeColumns = []probeColumn{
	{"probe ms", "`probe ms`: the time a fixed single-core workload (SHA-256 of 64 MiB) took with the services idle, " +
		"the mean of just before and just after the measurement. It rises when the host gives this machine less CPU, " +
		"which no other column shows: compare a scenario across runs only when their probes agree.",
		func(s Scenario) float64 { return s.ProbeMillis }},
	{"loopback µs", "`loopback µs`: one round trip of 64 bytes over loopback TCP between two goroutines, services idle, " +
		"the mean of just before and just after the measurement. It rises when system calls and wake-ups get dearer, " +
		"which the probe's pure computation does not show.",
		func(s Scenario) float64 { return s.LoopbackMicros }},
}

// machineBusy is procstat.MachineBusy (the report does not import procstat).
const machineBusy = "machine busy"
