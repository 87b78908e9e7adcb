package service

import "runtime/debug"

// GC defaults (decision 0076). A service's live heap is a few MiB, so at
// Go's default GOGC=100 it collects several hundred times a second under
// load; 200 halves that work (decision 0076 has the measurements). The
// soft memory limit keeps the larger heap target from growing a process
// past 100 MiB of RSS: near the limit the collector runs as often as it
// must. GOGC and GOMEMLIMIT, when set (the Helm chart derives GOMEMLIMIT
// from the container's memory limit), win.
const (
	defaultGCPercent   = 200
	defaultMemoryLimit = 64 << 20
)

// tuneGC applies the defaults that getenv does not override.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}
