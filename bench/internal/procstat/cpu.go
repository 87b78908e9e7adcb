package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// Groups name the processes to account CPU to: a process is in the group of
// its pid, or of its parent's pid (nginx workers), or of its command name
// (every postgres backend); everything else is "other".
type Groups struct {
	ByPID  map[int]string
	ByComm map[string]string
}

// MachineBusy is the group name of the whole machine's busy time (every
// CPU's time not idle, from /proc/stat): it includes work this program cannot
// see, such as other containers on the same host.
const MachineBusy = "machine busy"

// CPUSnapshot is the CPU time used so far by each group and the machine.
type CPUSnapshot struct {
	At time.Time
	// Groups is each group's CPU time so far (machine busy included);
	// procs is each process's, by PID, with its group.
	Groups map[string]time.Duration
	procs  map[int]procCPU
}

type procCPU struct {
	group string
	cpu   time.Duration
}

// TakeCPU reads /proc/*/stat once and sums user+system time per group (and
// keeps each process's, so that Used can tell ended processes apart).
func TakeCPU(g Groups) CPUSnapshot {
	snap := CPUSnapshot{At: time.Now(), Groups: map[string]time.Duration{}, procs: map[int]procCPU{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		if busy, err := ParseMachineBusy(b); err == nil {
			snap.Groups[MachineBusy] = busy
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return snap
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st, err := ParseStat(b)
		if err != nil {
			continue
		}
		name, ok := g.ByPID[pid]
		if !ok {
			name, ok = g.ByPID[st.PPID]
		}
		if !ok {
			name, ok = g.ByComm[st.Comm]
		}
		if !ok {
			name = "other"
		}
		snap.Groups[name] += st.CPU
		snap.procs[pid] = procCPU{group: name, cpu: st.CPU}
	}
	return snap
}

// Cores returns the cores each group used on average between two snapshots.
func Cores(before, after CPUSnapshot) map[string]float64 {
	return PerCore(Used(before, after), after.At.Sub(before.At))
}

// Used returns the CPU time each group used between two snapshots.
func Used(before, after CPUSnapshot) map[string]time.Duration {
	out := map[string]time.Duration{}
	if before.procs == nil || after.procs == nil {
		for name, t := range after.Groups {
			if d := t - before.Groups[name]; d > 0 {
				out[name] = d
			}
		}
		return out
	}
	// Per process: one that ended between the snapshots (a pgbench backend
	// closing, say) must not take its earlier CPU out of its group's total.
	// A process that started meanwhile counts all its CPU.
	for pid, a := range after.procs {
		d := a.cpu
		if b, ok := before.procs[pid]; ok && b.group == a.group {
			d -= b.cpu
		}
		if d > 0 {
			out[a.group] += d
		}
	}
	if d := after.Groups[MachineBusy] - before.Groups[MachineBusy]; d > 0 {
		out[MachineBusy] = d
	}
	return out
}

// PerCore turns CPU time used over wall time into cores used on average.
func PerCore(used map[string]time.Duration, wall time.Duration) map[string]float64 {
	out := map[string]float64{}
	if wall <= 0 {
		return out
	}
	for name, d := range used {
		out[name] = float64(d) / float64(wall)
	}
	return out
}

// Stat is what the suite reads from /proc/<pid>/stat.
type Stat struct {
	Comm string
	PPID int
	CPU  time.Duration // user + system
}

// ParseStat reads the command name, parent and CPU time of /proc/<pid>/stat.
func ParseStat(b []byte) (Stat, error) {
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("malformed stat %q", s)
	}
	fields := strings.Fields(s[end+1:])
	// After the command: state(0) ppid(1) ... utime(11) stime(12).
	if len(fields) < 13 {
		return Stat{}, fmt.Errorf("short stat %q", s)
	}
	ppid, err1 := strconv.Atoi(fields[1])
	ut, err2 := strconv.ParseInt(fields[11], 10, 64)
	st, err3 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Stat{}, fmt.Errorf("malformed stat %q", s)
	}
	return Stat{Comm: s[open+1 : end], PPID: ppid, CPU: time.Duration(ut+st) * time.Second / clockTicks}, nil
}

// ParseMachineBusy returns the busy time of all CPUs from the first line of
// /proc/stat: user, nice, system, irq, softirq and steal (not idle, not
// iowait; guest time is already in user).
func ParseMachineBusy(stat []byte) (time.Duration, error) {
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/stat: %w", err)
		}
		busy += v
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}
