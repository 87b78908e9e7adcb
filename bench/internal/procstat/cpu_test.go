package procstat_test

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/eventreg/eventreg/bench/internal/procstat"
)

func TestParseStatReadsCommandParentAndCPU(t *testing.T) {
	// A command name with spaces and parentheses, as the kernel writes it.
	line := []byte("4242 (nginx: worker (x)) S 4241 4241 4241 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 1 0 100 1000000 200 18446744073709551615\n")
	st, err := procstat.ParseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.Comm != "nginx: worker (x)" || st.PPID != 4241 || st.CPU != 3*time.Second {
		t.Fatalf("got %+v, want comm with parentheses, ppid 4241, 3s of CPU (300 ticks)", st)
	}
}

func TestParseStatRefusesGarbage(t *testing.T) {
	for _, s := range []string{"", "1 (x) S 0", "no parentheses at all"} {
		if _, err := procstat.ParseStat([]byte(s)); err == nil {
			t.Errorf("%q: want an error", s)
		}
	}
}

func TestCoresAccountsThisProcess(t *testing.T) {
	g := procstat.Groups{ByPID: map[int]string{os.Getpid(): "self"}}
	before := procstat.TakeCPU(g)
	deadline := time.Now().Add(200 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) { // burn CPU so that ticks accrue
		x++
	}
	after := procstat.TakeCPU(g)
	if cores := procstat.Cores(before, after); cores["self"] <= 0 {
		t.Fatalf("no CPU accounted to this process after a busy loop (%d iterations): %v", x, cores)
	}
}

func TestParseMachineBusyLeavesOutIdleAndIOWait(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := []byte("cpu  100 20 30 5000 400 5 15 30 0 0\ncpu0 50 10 15 2500 200 2 7 15 0 0\n")
	got, err := procstat.ParseMachineBusy(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 200 * time.Second / 100; got != want { // 100+20+30+5+15+30 ticks
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := procstat.ParseMachineBusy([]byte("intr 1 2 3\n")); err == nil {
		t.Fatal("a /proc/stat without the cpu line should be an error")
	}
}

// A process that ends between two snapshots (a pgbench backend closing) does
// not take its earlier CPU out of its group: the others' use still shows.
func TestUsedIgnoresProcessesThatEnded(t *testing.T) {
	g := procstat.Groups{ByPID: map[int]string{os.Getpid(): "self"}}
	// A child (in this group by the parent rule) spins, then waits on stdin.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; read x || true")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		st, err := procstat.ParseStat(b)
		if err != nil {
			t.Fatal(err)
		}
		if st.CPU >= 100*time.Millisecond && st.Comm == "sh" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child used only %v", st.CPU)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mid := procstat.TakeCPU(g)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	spin(60 * time.Millisecond)
	after := procstat.TakeCPU(g)
	// Summed per group, the child's 100+ ms leaving would cancel the 60 ms.
	if used := procstat.Used(mid, after)["self"]; used < 30*time.Millisecond {
		t.Fatalf("self used %v after the child ended, want the ~60ms this process spun", used)
	}
}

// spin burns d of this process's CPU time (not of the wall clock: on a
// loaded machine the process gets only part of each wall-clock millisecond).
func spin(d time.Duration) {
	for start := selfCPU(); selfCPU()-start < d; {
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
