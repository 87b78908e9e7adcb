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
