// Package procstat reads the resident memory of processes from /proc and samples its peak while a load runs.
package procstat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory is a process's resident set: now and its high-water mark.
type Memory struct {
	RSS, HWM int64 // bytes
}

// Read returns the memory of pid from /proc/<pid>/status.
func Read(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("reading the status of process %d: %w", pid, err)
	}
	return Parse(b)
}

// Parse reads VmRSS and VmHWM from the text of /proc/<pid>/status.
func Parse(status []byte) (Memory, error) {
	var m Memory
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return Memory{}, fmt.Errorf("unexpected %s line %q", key, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("parsing %s: %w", key, err)
		}
		if key == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.HWM = kb << 10
		}
		found++
	}
	if found != 2 {
		return Memory{}, fmt.Errorf("VmRSS or VmHWM missing (a kernel thread or an exited process?)")
	}
	return m, nil
}

// Sampler records the highest RSS of some processes while it runs.
type Sampler struct {
	mu   sync.Mutex
	peak map[string]int64
	stop context.CancelFunc
	done chan struct{}
}

// Sample starts reading the RSS of every named pid each interval until Stop.
func Sample(pids map[string]int, interval time.Duration) *Sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sampler{peak: map[string]int64{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.once(pids)
			select {
			case <-ctx.Done():
				s.once(pids)
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *Sampler) once(pids map[string]int) {
	for name, pid := range pids {
		m, err := Read(pid)
		if err != nil {
			continue // exited: its peak so far stands
		}
		s.mu.Lock()
		s.peak[name] = max(s.peak[name], m.RSS)
		s.mu.Unlock()
	}
}

// Stop ends the sampling and returns the peak RSS of each process in bytes.
func (s *Sampler) Stop() map[string]int64 {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.peak))
	for k, v := range s.peak {
		out[k] = v
	}
	return out
}
