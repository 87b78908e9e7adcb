package procstat_test

import (
	"os"
	"testing"
	"time"

	"github.com/eventreg/eventreg/bench/internal/procstat"
)

func TestParseReadsRSSAndHighWaterMark(t *testing.T) {
	status := []byte("Name:\tusers\nVmPeak:\t 1265072 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40960 kB\nThreads:\t9\n")
	m, err := procstat.Parse(status)
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 40<<20 || m.HWM != 50<<20 {
		t.Fatalf("got RSS %d HWM %d, want 40 MiB and 50 MiB", m.RSS, m.HWM)
	}
}

func TestParseRefusesStatusWithoutMemory(t *testing.T) {
	if _, err := procstat.Parse([]byte("Name:\tkthreadd\nThreads:\t1\n")); err == nil {
		t.Fatal("a status without VmRSS should be an error")
	}
}

func TestSamplerSeesThisProcess(t *testing.T) {
	s := procstat.Sample(map[string]int{"self": os.Getpid()}, 10*time.Millisecond)
	peak := s.Stop()
	if peak["self"] <= 0 {
		t.Fatalf("peak RSS of this process: %d", peak["self"])
	}
}
