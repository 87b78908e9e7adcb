package machine

import (
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// probeData is what Probe hashes: 64 MiB, made at the first probe.
var probeData = sync.OnceValue(func() []byte {
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = byte(i * 31)
	}
	return b
})

// Probe times a fixed single-core workload, SHA-256 of 64 MiB (about 40 ms
// on an idle 2-core EPYC VM), three times, and returns the median. Run with
// the services idle, it shows how much CPU the host gives this machine at
// that moment: on a VM, other guests' load slows every process alike, and
// neither the processes' CPU time nor /proc/stat's busy time shows it (the
// hypervisor reports no steal time on some hosts). A probe that takes a
// third longer than usual marks a measurement to rerun before comparing it.
func Probe() time.Duration {
	data := probeData()
	runs := make([]time.Duration, 3)
	for i := range runs {
		start := time.Now()
		sum := sha256.Sum256(data)
		runs[i] = time.Since(start)
		probeSink = sum[0]
	}
	slices.Sort(runs)
	return runs[1]
}

// probeSink keeps the hash from being optimised away.
var probeSink byte
