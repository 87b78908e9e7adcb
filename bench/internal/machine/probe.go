package machine

import (
	"crypto/sha256"
	"io"
	"net"
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

// loopbackRoundTrips is how many exchanges one LoopbackProbe run makes.
const loopbackRoundTrips = 2000

// LoopbackProbe times round trips of 64 bytes over a loopback TCP connection
// between two goroutines of this process: 2,000 in a row, three times, and
// returns the median run's time per round trip. Each exchange is what a
// request is made of (a write, a wake-up through the netpoller, a read), so
// it follows the cost of system calls and of the scheduler, which Probe's
// pure computation does not: on a VM a busy host can make every system call
// dearer while the cores compute at full speed.
func LoopbackProbe() (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				served <- nil // the client hung up
				return
			}
			if _, err := c.Write(buf); err != nil {
				served <- err
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	// 6,000 round trips take well under a second; a stuck exchange ends here.
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		c.Close()
		return 0, err
	}
	msg, reply := make([]byte, 64), make([]byte, 64)
	runs := make([]time.Duration, 3)
	for i := range runs {
		start := time.Now()
		for range loopbackRoundTrips {
			if _, err := c.Write(msg); err != nil {
				c.Close()
				return 0, err
			}
			if _, err := io.ReadFull(c, reply); err != nil {
				c.Close()
				return 0, err
			}
		}
		runs[i] = time.Since(start) / loopbackRoundTrips
	}
	c.Close()
	if err := <-served; err != nil {
		return 0, err
	}
	slices.Sort(runs)
	return runs[1], nil
}
