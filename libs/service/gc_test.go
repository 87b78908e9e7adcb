package service

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestTuneGCSetsDefaultsOnlyWhereTheEnvironmentIsSilent(t *testing.T) {
	gc, mem := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(gc); debug.SetMemoryLimit(mem) })

	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != defaultMemoryLimit {
		t.Errorf("GOMEMLIMIT unset: memory limit %d, want %d", got, defaultMemoryLimit)
	}

	env := map[string]string{"GOGC": "50", "GOMEMLIMIT": "230MiB"}
	tuneGC(func(k string) string { return env[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: the runtime's own setting must stay, got %d", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set: the runtime's own setting must stay, got %d", got)
	}
}
