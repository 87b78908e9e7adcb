package pgbench_test

import (
	"testing"

	"github.com/eventreg/eventreg/bench/internal/pgbench"
)

func TestParseTPSOfPostgres15AndLater(t *testing.T) {
	out := []byte(`transaction type: <builtin: select only>
scaling factor: 10
number of clients: 16
number of threads: 2
duration: 10 s
number of transactions actually processed: 412345
latency average = 0.388 ms
initial connection time = 12.345 ms
tps = 41234.567890 (without initial connection time)
`)
	got, err := pgbench.ParseTPS(out)
	if err != nil {
		t.Fatal(err)
	}
	if got != 41234.56789 {
		t.Fatalf("got %v", got)
	}
}

func TestParseTPSOfOlderPostgres(t *testing.T) {
	out := []byte("tps = 1000.5 (including connections establishing)\ntps = 1001.25 (excluding connections establishing)\n")
	got, err := pgbench.ParseTPS(out)
	if err != nil || got != 1001.25 {
		t.Fatalf("got %v, %v; want the figure excluding connection setup", got, err)
	}
}

func TestParseTPSWithoutSummaryIsAnError(t *testing.T) {
	if _, err := pgbench.ParseTPS([]byte("pgbench: error: connection refused\n")); err == nil {
		t.Fatal("want an error")
	}
}

func TestSteadyTPSAveragesTheIntervalsAfterTheWarmup(t *testing.T) {
	out := []byte(`progress: 1.0 s, 5000.0 tps, lat 2.5 ms stddev 2.4, 0 failed
progress: 2.0 s, 9000.0 tps, lat 2.1 ms stddev 2.1, 0 failed
progress: 3.0 s, 20000.0 tps, lat 0.8 ms stddev 0.8, 0 failed
progress: 4.0 s, 22000.0 tps, lat 0.7 ms stddev 0.7, 0 failed
tps = 14000.000000 (without initial connection time)
`)
	got, err := pgbench.SteadyTPS(out, 2)
	if err != nil || got != 21000 {
		t.Fatalf("got %v, %v; want 21000 (the mean of seconds 3 and 4)", got, err)
	}
	if _, err := pgbench.SteadyTPS(out, 4); err == nil {
		t.Fatal("no interval after the warm-up: want an error")
	}
}
