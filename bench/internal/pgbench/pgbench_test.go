package pgbench_test

import (
	"testing"

	"github.com/eventreg/eventreg/bench/internal/pgbench"
)

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
