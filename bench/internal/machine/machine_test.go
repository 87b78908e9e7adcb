package machine_test

import (
	"testing"
	"time"

	"github.com/eventreg/eventreg/bench/internal/machine"
)

func TestCPUModelIsTheFirstModelName(t *testing.T) {
	info := []byte("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n")
	if got := machine.CPUModel(info); got != "AMD EPYC 7B13" {
		t.Fatalf("got %q", got)
	}
	if got := machine.CPUModel([]byte("processor\t: 0\n")); got != "unknown" {
		t.Fatalf("without a model name: got %q", got)
	}
}

func TestMemTotalInBytes(t *testing.T) {
	if got := machine.MemTotal([]byte("MemTotal:       24684032 kB\nMemFree: 1 kB\n")); got != 24684032*1024 {
		t.Fatalf("got %d", got)
	}
}

func TestDescribeThisMachine(t *testing.T) {
	m := machine.Describe()
	if m.Cores < 1 || m.GoVersion == "" {
		t.Fatalf("incomplete description: %+v", m)
	}
}

func TestProbeTimesTheWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes 192 MiB")
	}
	d := machine.Probe()
	// Hashing 64 MiB cannot take under a millisecond (it would be 64 GB/s on
	// one core), nor a minute.
	if d < time.Millisecond || d > time.Minute {
		t.Fatalf("probe took %v", d)
	}
	t.Logf("probe: %v", d)
}

func TestLoopbackProbeTimesRoundTrips(t *testing.T) {
	d, err := machine.LoopbackProbe()
	if err != nil {
		t.Fatal(err)
	}
	// A loopback round trip takes microseconds: under 100 ns would be no
	// system call at all, over 100 ms a broken network stack.
	if d < 100*time.Nanosecond || d > 100*time.Millisecond {
		t.Fatalf("round trip took %v", d)
	}
	t.Logf("loopback round trip: %v", d)
}
