// Package testkit is the test harness: throwaway PostgreSQL databases (on the
// server named by TEST_DATABASE_URL, the local default server, or a server it
// starts), throwaway Redis servers, free ports and polling with a deadline.
// The local stack runner uses its server starters too.
package testkit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Process is a server started by this package.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	stop func() error
}

// PID is the server's process id (0 when it was not started), e.g. to read
// its memory from /proc.
func (p *Process) PID() int {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop ends the server and waits for it.
func (p *Process) Stop() error {
	if p == nil {
		return nil
	}
	return p.stop()
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for a
// server started next. It picks outside the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), where the local end of every outgoing
// connection comes from: a port the kernel hands out (":0") can be taken by
// any process's next connection before the server binds it, which failed a
// whole stack's start with "address already in use". A port is handed out
// once per process.
func FreePort() (int, error) {
	lo, hi := belowEphemeral()
	portsMu.Lock()
	defer portsMu.Unlock()
	for i := 0; hi > lo && i < 200; i++ {
		p := lo + rand.IntN(hi-lo)
		if handedOut[p] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		ln.Close()
		handedOut[p] = true
		return p, nil
	}
	// No room below the ephemeral range: let the kernel choose.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// belowEphemeral is the range FreePort picks from: [20000, the first
// ephemeral port), or an empty one when that leaves fewer than 1,000 ports.
func belowEphemeral() (lo, hi int) {
	lo, hi = 20000, 32768 // Linux's default first ephemeral port
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if first, err := strconv.Atoi(f[0]); err == nil {
				hi = first
			}
		}
	}
	if hi-lo < 1000 {
		return 0, 0
	}
	return lo, hi
}

// PostgresBinDir finds initdb/postgres: $PG_BIN, then Debian's
// /usr/lib/postgresql/<newest>/bin, then $PATH.
func PostgresBinDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found: install Debian's postgresql package or set PG_BIN")
}

func versionOf(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// StartPostgres initialises a cluster in dir (if empty) and starts it on
// 127.0.0.1:port with trust authentication. It returns the admin DSN.
// Running as root, the cluster is owned by the "postgres" OS user when one exists.
func StartPostgres(ctx context.Context, dir string, port int) (*Process, string, error) {
	bin, err := PostgresBinDir()
	if err != nil {
		return nil, "", err
	}
	cred, err := postgresDataDir(dir)
	if err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		if err := initdb(ctx, bin, dir, cred); err != nil {
			return nil, "", err
		}
	}
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("eventreg-postgres-%d.log", port))
	p, dsn, err := startPostmaster(ctx, bin, dir, port, cred, logPath,
		"fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=300", "shared_buffers=256MB")
	if err != nil {
		return nil, "", err
	}
	return p, dsn, nil
}

// postgresDataDir prepares dir for a cluster: running as root, it is made
// and handed to the "postgres" OS user, whose credential is returned for
// running the server programs (nil when not root).
func postgresDataDir(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	uid, gid, ok := lookupUser("postgres")
	if !ok {
		return nil, errors.New("running as root needs an OS user named postgres to run a throwaway PostgreSQL")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return nil, err
	}
	// The postgres user must be able to reach dir through private temp dirs.
	for d := filepath.Dir(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(d, st.Mode().Perm()|0o011)
		}
	}
	return &syscall.Credential{Uid: uid, Gid: gid}, nil
}

// postgresCommand runs one of PostgreSQL's programs as cred.
func postgresCommand(ctx context.Context, bin string, cred *syscall.Credential, program string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, program), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", program, err, out)
	}
	return nil
}

func initdb(ctx context.Context, bin, dir string, cred *syscall.Credential) error {
	return postgresCommand(ctx, bin, cred, "initdb", "-D", dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
}

// startPostmaster starts the server of dir on 127.0.0.1:port with settings
// (name=value) and waits until it accepts sessions.
func startPostmaster(ctx context.Context, bin, dir string, port int, cred *syscall.Credential, logPath string, settings ...string) (*Process, string, error) {
	args := []string{"-D", dir, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir}
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	logf, _ := os.Create(logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := startProcess(cmd, syscall.SIGINT)
	if err != nil {
		return nil, "", fmt.Errorf("starting postgres: %w", err)
	}
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := Poll(ctx, 30*time.Second, func(ctx context.Context) error { return PingPostgres(ctx, dsn) }); err != nil {
		p.Stop()
		return nil, "", fmt.Errorf("postgres did not come up (log: %s): %w", logPath, err)
	}
	return p, dsn, nil
}

// StartRedis starts redis-server on 127.0.0.1:port keeping data in dir; with
// aof it persists writes as the chart and docker-compose.yaml run Redis
// (appendonly, appendfsync everysec: decision 0081), so benchmarks measure
// the deployed setting.
func StartRedis(ctx context.Context, dir string, port int, aof bool) (*Process, string, error) {
	args := []string{"--appendonly", "no"}
	if aof {
		args = []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	}
	return startRedisServer(ctx, dir, port, args...)
}

// startRedisServer starts redis-server on 127.0.0.1:port with extra
// arguments (a config file first, when one is given, as redis-server wants).
func startRedisServer(ctx context.Context, dir string, port int, extra ...string) (*Process, string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", errors.New("redis-server not found: install Debian's redis-server package")
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--daemonize", "no",
		"--maxmemory-policy", "noeviction", "--protected-mode", "no", "--logfile", ""}
	if len(extra) > 0 && !strings.HasPrefix(extra[0], "--") {
		args = append([]string{extra[0]}, args...) // the config file
		extra = extra[1:]
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p, err := startProcess(cmd, syscall.SIGTERM)
	if err != nil {
		return nil, "", fmt.Errorf("starting redis-server: %w", err)
	}
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	// Up means this process answers on the port: a server another test
	// started there (the port was free when picked, then taken) answers too,
	// and would vanish under this one's test when that test ends.
	ours := func(ctx context.Context) error {
		select {
		case <-p.done:
			return fmt.Errorf("%w (port %d taken?)", errRedisExited, port)
		default:
		}
		rc := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1, DialTimeout: time.Second})
		defer rc.Close()
		info, err := rc.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		if want := "process_id:" + strconv.Itoa(cmd.Process.Pid) + "\r\n"; !strings.Contains(info, want) {
			return fmt.Errorf("%w: another redis-server answers on port %d", errRedisExited, port)
		}
		return nil
	}
	pctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	if err := Poll(pctx, 10*time.Second, func(ctx context.Context) error {
		err := ours(ctx)
		if errors.Is(err, errRedisExited) {
			giveUp() // no use waiting: the caller picks another port
		}
		return err
	}); err != nil {
		p.Stop()
		return nil, "", fmt.Errorf("redis-server did not come up: %w", err)
	}
	return p, url, nil
}

var errRedisExited = errors.New("redis-server exited")

func startProcess(cmd *exec.Cmd, sig syscall.Signal) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	p.stop = func() error {
		select {
		case <-p.done:
			return nil
		default:
		}
		_ = cmd.Process.Signal(sig)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		return nil
	}
	return p, nil
}

// Kill stops the server at once (SIGKILL), as a crash would.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Poll calls fn until it returns nil or timeout passes, returning the last error.
func Poll(ctx context.Context, timeout time.Duration, fn func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var err error
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PingPostgres connects to dsn and pings the server: whether a PostgreSQL
// answers there.
func PingPostgres(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

func lookupUser(name string) (uid, gid uint32, ok bool) {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 3 && f[0] == name {
			u, err1 := strconv.Atoi(f[2])
			g, err2 := strconv.Atoi(f[3])
			return uint32(u), uint32(g), err1 == nil && err2 == nil
		}
	}
	return 0, 0, false
}
