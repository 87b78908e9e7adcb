// Package suite runs the benchmark suite: it launches the real system behind nginx on this machine, makes sure the large data sets exist, drives each scenario at each concurrency, measures the pgbench baseline and the micro-benchmarks, and returns the report.
package suite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/eventreg/eventreg/bench/internal/dataset"
	"github.com/eventreg/eventreg/bench/internal/load"
	"github.com/eventreg/eventreg/bench/internal/machine"
	"github.com/eventreg/eventreg/bench/internal/microbench"
	"github.com/eventreg/eventreg/bench/internal/pgbench"
	"github.com/eventreg/eventreg/bench/internal/procstat"
	"github.com/eventreg/eventreg/bench/internal/report"
	"github.com/eventreg/eventreg/e2e/stack"
)

// Options configure a run.
type Options struct {
	Root        string        // repository root
	StateDir    string        // binaries, logs, Redis data and secrets kept between runs
	Scale       dataset.Scale // data set size
	Duration    time.Duration // measured time per scenario and concurrency
	Warmup      time.Duration // unmeasured load before each measurement
	Concurrency []int
	Filter      *regexp.Regexp // scenarios to run (nil: all)
	Fresh       bool           // drop and regenerate the benchmark databases
	PgBench     bool
	Micro       bool
	// Webhooks measures webhook delivery after the scenarios (when the
	// filter, if any, matches "webhooks").
	Webhooks bool
	LogLevel string
	// Env is added to every service's environment (e.g. GOGC=200 to try a
	// setting without a release).
	Env map[string]string
	// Profile saves a CPU profile of every service during each measurement
	// (the first slice of an interleaved pair) under StateDir/profiles/.
	Profile  bool
	Progress io.Writer
}

// The demo fixture's apps and user (deploy/fixtures/demo.json).
const (
	serviceClientID     = "501"
	serviceClientSecret = "a-long-random-demo-secret-of-at-least-32-chars"
	oboClientID         = "502"
	oboClientSecret     = "another-long-random-demo-secret-of-32-chars"
	oboRedirectURI      = "http://127.0.0.1:9999/callback"
	demoUser            = "alice"
	demoPassword        = "correct horse battery staple"
	conventionID        = "2026"
)

// Run runs the suite and returns its report (also when some scenario failed:
// the failure is in the report).
func Run(ctx context.Context, o Options) (*report.Report, error) {
	say := func(format string, args ...any) { fmt.Fprintf(o.Progress, format+"\n", args...) }
	rep := &report.Report{StartedAt: time.Now().UTC(), Scale: o.Scale.Name, Machine: machine.Describe(),
		Settings:    report.Settings{DurationSeconds: o.Duration.Seconds(), Concurrency: o.Concurrency, Gateway: "nginx, plain HTTP on 127.0.0.1"},
		GitRevision: gitRevision(ctx, o.Root)}
	if o.Filter != nil {
		rep.Settings.Filter = o.Filter.String()
	}

	// Before the minute of launching: the stateless scenarios need wrk.
	if err := load.EnsureWrk(ctx, o.Progress); err != nil {
		return nil, err
	}
	sec, err := loadSecrets(filepath.Join(o.StateDir, "secrets.json"))
	if err != nil {
		return nil, err
	}
	// Redis holds only sessions, codes, refresh tokens and rate-limit state:
	// every run starts with an empty one, so that runs do not pile up tokens.
	if err := os.RemoveAll(filepath.Join(o.StateDir, "redis")); err != nil {
		return nil, fmt.Errorf("clearing the last run's Redis: %w", err)
	}
	say("launching the system (databases bench_%s_*) ...", o.Scale.Name)
	s, err := stack.Launch(ctx, stack.Config{Root: o.Root, Dir: o.StateDir, Build: true, DatabasePrefix: "bench_" + o.Scale.Name,
		RecreateDatabases: o.Fresh, Fixture: filepath.Join(o.Root, "deploy", "fixtures", "demo.json"), ConventionID: conventionID,
		KeyEncryptionKey: sec.KeyEncryptionKey, ClientSecretKey: sec.ClientSecretKey, CursorKey: sec.CursorKey,
		Env: serviceEnv(o), Stdout: o.Progress})
	if err != nil {
		return nil, fmt.Errorf("launching the system: %w", err)
	}
	defer s.Close()

	counts, err := dataset.Ensure(ctx, s, o.Scale, conventionID, o.Progress)
	if err != nil {
		return nil, err
	}
	rep.Dataset = report.Dataset{Users: counts.Users, Roles: counts.Roles, Registrations: counts.Registrations, Volunteers: counts.Volunteers}

	env, err := prepare(ctx, s, o, sec.CursorKey, counts)
	if err != nil {
		return nil, err
	}
	defer env.close(ctx)

	// The pgbench baseline, with as many clients as each concurrency level,
	// is measured just before and after GET /api/v0/users/:id at that level
	// when that runs, else once per level here.
	var baseline *pgbench.Baseline
	if o.PgBench {
		say("pgbench -S baseline: preparing ...")
		baseline, err = pgbench.Prepare(ctx, pgbench.Options{AdminURL: s.AdminDatabaseURL()})
		if err != nil {
			say("pgbench: %v", err)
			for _, c := range o.Concurrency {
				rep.PgBench = append(rep.PgBench, report.PgBench{Clients: c, Error: err.Error()})
			}
		}
	}
	if baseline != nil && !bracketsReads(o) {
		for _, c := range o.Concurrency {
			say("pgbench -S -c %d baseline ...", c)
			res := baseline.Result(c)
			tps, secs, err := baseline.Measure(ctx, c, pgbench.Warmup, 10*time.Second)
			res.TPS, res.DurationSeconds, res.Runs = tps, secs, 1
			if err != nil {
				res.Error = err.Error()
				say("pgbench: %v", err)
			} else {
				say("pgbench -S -c %d: %.0f tps", c, tps)
			}
			rep.PgBench = append(rep.PgBench, res)
		}
		baseline = nil
	}

	pids := map[string]int{"nginx": s.NginxPID()}
	for name, svc := range s.Services {
		if pid := svc.PID(); pid != 0 {
			pids[name] = pid
		}
	}
	if pid := s.RedisProcess().PID(); pid != 0 {
		pids["redis"] = pid
	}

	var prof *profiler
	if o.Profile {
		prof = &profiler{dir: filepath.Join(o.StateDir, "profiles", rep.StartedAt.Format("2006-01-02T1504")), internal: map[string]string{}}
		for name, svc := range s.Services {
			prof.internal[name] = svc.OpsURL
		}
		say("CPU profiles go to %s", prof.dir)
	}

	for _, group := range groupScenarios(env.scenarios(), o.Filter) {
		for _, c := range o.Concurrency {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			var pg *baselineRun
			if baseline != nil && group[0].name == report.UserByID {
				pg = &baselineRun{b: baseline, res: baseline.Result(c), progress: o.Progress}
			}
			results := runGroup(ctx, group, c, o, pids, prof, pg)
			if pg != nil {
				rep.PgBench = append(rep.PgBench, pg.res)
			}
			for _, res := range results {
				rep.Scenarios = append(rep.Scenarios, res)
				if res.Skipped != "" {
					say("%-28s c=%-3d skipped: %s", res.Name, c, res.Skipped)
					continue
				}
				say("%-28s c=%-3d %8.0f req/s  p50 %6s  p99 %6s  p99.9 %6s ms  errors %d", res.Name, c, res.RPS,
					report.Millis(res.P50Millis), report.Millis(res.P99Millis), report.Millis(res.P999Millis), res.Errors)
				if res.FirstError != "" {
					say("    first error: %s", res.FirstError)
				}
			}
		}
	}

	if o.Webhooks && (o.Filter == nil || o.Filter.MatchString("webhooks")) {
		rep.Webhooks = measureWebhooks(ctx, s, env, say)
	}

	rep.PeakRSS = map[string]int64{}
	for name, pid := range pids {
		if m, err := procstat.Read(pid); err == nil {
			rep.PeakRSS[name] = m.HWM
		}
	}

	if o.Micro {
		say("micro-benchmarks (go test -bench) ...")
		micro, errs := microbench.Run(ctx, o.Root, microbench.HotPaths, time.Second)
		rep.Micro = micro
		for _, e := range errs {
			rep.Notes = append(rep.Notes, "micro-benchmark failed: "+report.FirstLine(e.Error()))
			say("%v", e)
		}
	}
	rep.Notes = append(rep.Notes, env.notes...)
	rep.FinishedAt = time.Now().UTC()
	rep.Evaluate(report.DefaultTargets())
	return rep, nil
}

// pairs are the scenarios compared with each other (first page, deep page):
// they are measured interleaved, so that a change in the machine's other load
// during the run weighs on both alike.
var pairs = map[string]string{report.UsersSearchFirst: report.UsersSearchDeep, report.UsersRoleFirst: report.UsersRoleDeep,
	report.RegistrationsFirst: report.RegistrationsDeep}

// interleavedSlices is how many slices each scenario of a pair is cut into.
const interleavedSlices = 6

// groupScenarios returns the selected scenarios in order, a pair as one group.
func groupScenarios(all []scenario, filter *regexp.Regexp) [][]scenario {
	selected := map[string]scenario{}
	for _, sc := range all {
		if filter == nil || filter.MatchString(sc.name) {
			selected[sc.name] = sc
		}
	}
	var out [][]scenario
	done := map[string]bool{}
	for _, sc := range all {
		if _, ok := selected[sc.name]; !ok || done[sc.name] {
			continue
		}
		group := []scenario{sc}
		if partner, ok := selected[pairs[sc.name]]; ok {
			group = append(group, partner)
			done[partner.name] = true
		}
		out = append(out, group)
	}
	return out
}

// measurement accumulates the slices of one scenario's measurement.
type measurement struct {
	out  load.Outcome
	cpu  map[string]time.Duration
	wall time.Duration
	rss  map[string]int64
	// profileErrs are failures to capture a CPU profile (-profile).
	profileErrs []error
}

func (m *measurement) add(ctx context.Context, spec load.Spec, pids map[string]int, profile func() []error) error {
	groups := cpuGroups(pids)
	sampler := procstat.Sample(pids, 100*time.Millisecond)
	before := procstat.TakeCPU(groups)
	// The last snapshot is taken when the load stops: wrk is still running
	// then (its CPU is the load generator's), and reading out its histogram
	// afterwards is not part of the load.
	var after procstat.CPUSnapshot
	spec.OnLoadEnd = func() { after = procstat.TakeCPU(groups) }
	out, err := load.Run(ctx, spec)
	if after.At.IsZero() {
		after = procstat.TakeCPU(groups)
	}
	rss := sampler.Stop()
	if profile != nil {
		m.profileErrs = append(m.profileErrs, profile()...)
	}
	if err != nil {
		return err
	}
	m.out = load.Merge(m.out, out)
	m.wall += after.At.Sub(before.At)
	if m.cpu == nil {
		m.cpu, m.rss = map[string]time.Duration{}, map[string]int64{}
	}
	for k, v := range procstat.Used(before, after) {
		m.cpu[k] += v
	}
	for k, v := range rss {
		m.rss[k] = max(m.rss[k], v)
	}
	return nil
}

func (m *measurement) fill(res *report.Scenario) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	out := m.out
	res.Requests, res.Errors, res.Statuses, res.FirstError = out.Requests, out.Errors, out.Statuses, out.FirstError
	res.DurationSeconds, res.RPS = out.Elapsed.Seconds(), out.RPS()
	res.P50Millis, res.P99Millis, res.P999Millis = ms(out.Latencies.Quantile(50)), ms(out.Latencies.Quantile(99)), ms(out.Latencies.Quantile(99.9))
	res.MaxMillis = ms(out.Latencies.Max())
	res.PeakRSS, res.CPUCores = m.rss, procstat.PerCore(m.cpu, m.wall)
}

// runGroup measures one scenario, or a pair interleaved, at concurrency c,
// sampling the RSS and CPU of pids.
func runGroup(ctx context.Context, group []scenario, c int, o Options, pids map[string]int, prof *profiler, pg *baselineRun) []report.Scenario {
	results := make([]report.Scenario, len(group))
	specs := make([]load.Spec, len(group))
	// How fast the host lets this machine run, with the services idle: just
	// before, and just after the measurement.
	probeBefore := machine.Probe()
	loopbackBefore, loopbackErr := machine.LoopbackProbe()
	// The baseline brackets the measurement: before the warm-up (pgbench
	// evicts the users' pages from shared buffers), and the reads then warm
	// up as long as pgbench does.
	warmup := o.Warmup
	if pg != nil {
		pg.measure(ctx, o.Duration/2)
		warmup = max(warmup, pgbench.Warmup)
	}
	for i, sc := range group {
		results[i] = report.Scenario{Name: sc.name, Request: sc.request, Concurrency: c}
		if sc.unavailable != "" {
			results[i].Skipped = sc.unavailable
			continue
		}
		if sc.warm && warmup > 0 {
			w, err := sc.load(ctx, c)
			if err == nil {
				w.Duration, w.Name = warmup, sc.name+"-warmup"
				_, err = load.Run(ctx, w)
			}
			if err != nil {
				results[i].Skipped = "warming up: " + err.Error()
				continue
			}
		}
		spec, err := sc.load(ctx, c)
		if err != nil {
			results[i].Skipped = "preparing: " + err.Error()
			continue
		}
		spec.Name = sc.name
		specs[i] = spec
	}
	slices := 1
	if len(group) > 1 {
		slices = interleavedSlices
	}
	m := make([]measurement, len(group))
	for s := range slices {
		for k := range group {
			i := k
			if s%2 == 1 {
				i = len(group) - 1 - k // A B, then B A: a linear drift weighs on both alike
			}
			if results[i].Skipped != "" {
				continue
			}
			spec := specs[i]
			spec.Duration = o.Duration / time.Duration(slices)
			var profile func() []error
			if prof != nil && s == 0 {
				profile = prof.capture(ctx, fmt.Sprintf("%s-c%d", spec.Name, c), spec.Duration)
			}
			if err := m[i].add(ctx, spec, pids, profile); err != nil {
				results[i].Skipped = err.Error()
			}
		}
	}
	probeAfter := machine.Probe()
	loopbackAfter, err := machine.LoopbackProbe()
	loopbackErr = errors.Join(loopbackErr, err)
	pg.measure(ctx, o.Duration/2) // ... and after
	pg.finish()
	for i := range group {
		if results[i].Skipped == "" {
			m[i].fill(&results[i])
			results[i].ProbeMillis = float64(probeBefore+probeAfter) / 2 / float64(time.Millisecond)
			if loopbackErr == nil {
				results[i].LoopbackMicros = float64(loopbackBefore+loopbackAfter) / 2 / float64(time.Microsecond)
			}
		}
		for _, err := range m[i].profileErrs {
			fmt.Fprintf(o.Progress, "    %v\n", err)
		}
	}
	if loopbackErr != nil {
		fmt.Fprintf(o.Progress, "    loopback probe: %v\n", loopbackErr)
	}
	return results
}

// serviceEnv is what the suite adds to the services' environment.
func serviceEnv(o Options) map[string]string {
	// The token scenarios measure what one client can get from the token
	// endpoint: its per-client limit (decision 0093) is lifted, as -env can.
	env := map[string]string{"LOG_LEVEL": o.LogLevel, "PPROF_ENABLED": "true", "WEBHOOK_ALLOWED_NETWORKS": webhookAllowedNetworks,
		"CLIENT_TOKEN_REQUESTS": "100000000"}
	for k, v := range o.Env {
		env[k] = v
	}
	return env
}

// cpuGroups accounts CPU to the services, nginx (master and workers), Redis,
// every PostgreSQL backend, and this program with its children (the load
// generator: vegeta in this process, or wrk, a child, by the parent rule).
func cpuGroups(pids map[string]int) procstat.Groups {
	g := procstat.Groups{ByPID: map[int]string{os.Getpid(): "load generator"}, ByComm: map[string]string{"postgres": "postgres"}}
	for name, pid := range pids {
		g.ByPID[pid] = name
	}
	return g
}

// secrets are the services' keys, kept in the state directory so that the
// reused databases (sealed signing keys, client-secret hashes) stay readable.
type secrets struct {
	KeyEncryptionKey string `json:"keyEncryptionKey"`
	ClientSecretKey  string `json:"clientSecretKey"`
	CursorKey        string `json:"cursorKey"`
}

func loadSecrets(path string) (secrets, error) {
	var s secrets
	b, err := os.ReadFile(path)
	if err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			return s, fmt.Errorf("reading %s: %w", path, err)
		}
		return s, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("reading %s: %w", path, err)
	}
	rnd := func() string {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	s = secrets{KeyEncryptionKey: rnd(), ClientSecretKey: rnd(), CursorKey: rnd()}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return s, err
	}
	b, _ = json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return s, fmt.Errorf("writing %s: %w", path, err)
	}
	return s, nil
}

func gitRevision(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// baselineRun accumulates the pgbench baseline measured just before and just
// after GET /api/v0/users/:id at the same concurrency: a change in the
// machine's speed during the run weighs on both alike.
type baselineRun struct {
	b            *pgbench.Baseline
	res          report.PgBench // its Clients is the concurrency
	progress     io.Writer
	transactions float64 // tps × seconds, summed
	seconds      int
	err          error
}

// bracketsReads reports whether the baseline will be measured around
// users-get (selected).
func bracketsReads(o Options) bool {
	return o.Filter == nil || o.Filter.MatchString(report.UserByID)
}

func (r *baselineRun) measure(ctx context.Context, d time.Duration) {
	if r == nil || r.err != nil {
		return
	}
	tps, secs, err := r.b.Measure(ctx, r.res.Clients, pgbench.Warmup, d)
	if err != nil {
		r.err = err
		return
	}
	fmt.Fprintf(r.progress, "    pgbench -S -c %d: %.0f tps over %d s after %s of warm-up\n", r.res.Clients, tps, secs, pgbench.Warmup)
	r.transactions += tps * float64(secs)
	r.seconds += secs
	r.res.Runs++
}

func (r *baselineRun) finish() {
	if r == nil {
		return
	}
	r.res.Brackets = report.UserByID
	r.res.DurationSeconds = r.seconds
	if r.seconds > 0 {
		r.res.TPS = r.transactions / float64(r.seconds)
	}
	if r.err != nil {
		r.res.Error = r.err.Error()
		fmt.Fprintf(r.progress, "pgbench: %v\n", r.err)
		return
	}
	fmt.Fprintf(r.progress, "pgbench -S -c %d: %.0f tps (just before and after %s)\n", r.res.Clients, r.res.TPS, report.UserByID)
}
