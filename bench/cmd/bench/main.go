// Command bench runs the benchmark suite (`make bench`): the real services
// behind nginx on this machine, loaded at fixed concurrency, with a printed
// report that is also written as JSON and Markdown under bench/results/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eventreg/eventreg/bench/internal/dataset"
	"github.com/eventreg/eventreg/bench/internal/suite"
	"github.com/eventreg/eventreg/e2e/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	duration := fs.Duration("duration", 10*time.Second, "measured time per scenario and concurrency")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured load before each measurement (scenarios without single-use state)")
	conc := fs.String("concurrency", "16,64", "comma-separated concurrency levels (closed model: N workers)")
	filter := fs.String("run", "", "regexp selecting scenarios by name (default: all)")
	scaleName := fs.String("scale", "full", "data set size: "+strings.Join(scaleNames(), " or "))
	fresh := fs.Bool("fresh", false, "drop the benchmark databases and generate the data sets again")
	pg := fs.Bool("pgbench", true, "measure the pgbench -S baseline")
	micro := fs.Bool("micro", true, "run the hot-path micro-benchmarks (go test -bench)")
	webhooks := fs.Bool("webhooks", true, "measure webhook delivery after the scenarios: a burst drained, and single changes' latency")
	out := fs.String("out", "bench/results", "directory of the written reports (relative to the repository root)")
	state := fs.String("state", ".run/bench", "directory kept between runs: binaries, logs, Redis data, secrets (relative to the root)")
	logLevel := fs.String("log-level", "info", "LOG_LEVEL of the services")
	env := map[string]string{}
	fs.Func("env", "KEY=VALUE added to every service's environment (repeatable), e.g. -env GOGC=200", func(kv string) error {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", kv)
		}
		env[k] = v
		return nil
	})
	scenario := fs.String("scenario", "", `run one standalone scenario instead of the suite: "revoke-flood" (one app mints and revokes as fast as it can; memory and Redis keys read every 5s)`)
	floodFor := fs.Duration("flood-duration", time.Minute, "how long revoke-flood floods")
	floodWorkers := fs.Int("flood-workers", 32, "concurrent minting and revoking workers of revoke-flood")
	profile := fs.Bool("profile", false, "save a CPU profile (pprof) of every service during each measurement under <state>/profiles/")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *scenario != "" {
		return runScenario(ctx, *scenario, suite.FloodOptions{StateDir: *state, Duration: *floodFor, Workers: *floodWorkers,
			LogLevel: *logLevel, Env: env, Progress: os.Stdout})
	}
	scale, ok := dataset.Scales[*scaleName]
	if !ok {
		return fmt.Errorf("-scale %q: want %s", *scaleName, strings.Join(scaleNames(), " or "))
	}
	levels, err := parseLevels(*conc)
	if err != nil {
		return err
	}
	var re *regexp.Regexp
	if *filter != "" {
		if re, err = regexp.Compile(*filter); err != nil {
			return fmt.Errorf("-run: %w", err)
		}
	}
	if *duration <= 0 {
		return errors.New("-duration must be positive")
	}
	root, err := stack.FindRoot()
	if err != nil {
		return err
	}

	rep, err := suite.Run(ctx, suite.Options{Root: root, StateDir: abs(root, *state), Scale: scale, Duration: *duration, Warmup: *warmup,
		Concurrency: levels, Filter: re, Fresh: *fresh, PgBench: *pg, Micro: *micro, Webhooks: *webhooks, LogLevel: *logLevel, Profile: *profile, Env: env, Progress: os.Stdout})
	if err != nil {
		return err
	}

	md := rep.Markdown()
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	dir := abs(root, *out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// <date>T<time>-<scale>: several runs a day, at either scale, side by side.
	name := rep.StartedAt.UTC().Format("2006-01-02T1504") + "-" + scale.Name
	for ext, b := range map[string][]byte{".json": js, ".md": []byte(md)} {
		if err := os.WriteFile(filepath.Join(dir, name+ext), b, 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	fmt.Println()
	fmt.Print(md)
	fmt.Printf("\nwritten: %s.{json,md}\n", filepath.Join(dir, name))
	if missed := rep.Missed(); len(missed) > 0 {
		fmt.Printf("%d target(s) missed; see docs/performance.md for what limits them\n", len(missed))
	}
	return nil
}

// runScenario runs a standalone scenario and prints its readings.
func runScenario(ctx context.Context, name string, o suite.FloodOptions) error {
	if name != "revoke-flood" {
		return fmt.Errorf("-scenario %q: the standalone scenarios are revoke-flood", name)
	}
	if o.Duration <= 0 || o.Workers < 1 {
		return errors.New("-flood-duration must be positive and -flood-workers at least 1")
	}
	root, err := stack.FindRoot()
	if err != nil {
		return err
	}
	o.Root, o.StateDir = root, abs(root, o.StateDir)
	samples, err := suite.RevokeFlood(ctx, o)
	if err != nil {
		return err
	}
	first, last := samples[0], samples[len(samples)-1]
	fmt.Printf("\nrevoke-flood, %s, %d workers: %d revocations accepted, %d requests refused (429)\n", o.Duration, o.Workers, last.Revoked, last.Refused)
	fmt.Printf("users RSS %.1f -> %.1f MiB (highest %.1f); Redis keys %d -> %d (highest %d); feed entries %d -> %d; users holds %d -> %d\n",
		mib(first.UsersRSS), mib(last.UsersRSS), mib(highest(samples, func(s suite.FloodSample) int64 { return s.UsersRSS })),
		first.RedisKeys, last.RedisKeys, highest(samples, func(s suite.FloodSample) int64 { return s.RedisKeys }),
		first.FeedEntries, last.FeedEntries, first.ReplicaHeld, last.ReplicaHeld)
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func highest(samples []suite.FloodSample, f func(suite.FloodSample) int64) int64 {
	var m int64
	for _, s := range samples {
		m = max(m, f(s))
	}
	return m
}

func scaleNames() []string {
	var names []string
	for n := range dataset.Scales {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("-concurrency: %q is not a whole number from 1 to 4096", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}
