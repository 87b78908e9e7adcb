// Package stack runs the whole system on this machine from its real parts:
// the service binaries (built from the tree), PostgreSQL (a database per
// service), Redis with AOF, and nginx as the gateway with the repository's
// route table. `make run` and the end-to-end tests both use it.
package stack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

// ServiceNames lists the services in import order (users first: the others
// refer to users by id).
var ServiceNames = []string{"users", "auth", "volunteers", "registrations", "dealers"}

// Config says how to launch a stack.
type Config struct {
	// Root is the repository root (default: found from the working directory).
	Root string
	// Dir keeps logs, certificates, binaries and nginx files (required).
	Dir string
	// AdminDatabaseURL is a PostgreSQL server where the per-service databases
	// are created (default: testkit.AdminURL()).
	AdminDatabaseURL string
	// DatabasePrefix names the databases <prefix>_<service>.
	DatabasePrefix string
	// RecreateDatabases drops existing databases first.
	RecreateDatabases bool
	// RedisURL of an existing Redis; empty starts one in Dir with AOF.
	RedisURL string
	// RedisPort for a started Redis (0: any free port).
	RedisPort int
	// GatewayHTTPPort and GatewayTLSPort (0: any free port).
	GatewayHTTPPort, GatewayTLSPort int
	// BasePort, when set, gives service i the ports BasePort+i (public),
	// BasePort+1000+i (internal) and BasePort+2000+i (ops), in the order
	// auth, users, volunteers, registrations, dealers (8101 → auth 8101/9101/10101
	// ...). Zero picks free ports.
	BasePort int
	// Fixture is imported after migrations (empty: none).
	Fixture string
	// Secrets for the services (generated when empty).
	KeyEncryptionKey, ClientSecretKey, CursorKey, InternalAuthKey string
	// ConventionID of the deployment (default 2026).
	ConventionID string
	// Env is added to every service's environment.
	Env map[string]string
	// Build compiles the services into Dir/bin first (else they must be there).
	Build bool
	// Stdout receives progress lines (nil: discarded).
	Stdout io.Writer
}

// Service is one running service binary.
type Service struct {
	Name        string
	PublicURL   string
	InternalURL string
	// OpsURL serves /healthz, /readyz, /metrics (and profiles).
	OpsURL string

	bin, logPath string
	env          []string
	mu           sync.Mutex
	cmd          *exec.Cmd
	done         chan struct{}
}

// Stack is a running system.
type Stack struct {
	GatewayURL    string
	GatewayTLSURL string
	Issuer        string
	RedisURL      string
	Services      map[string]*Service
	Dir           string
	CertFile      string

	cfg        Config
	redis      *testkit.Process
	nginx      *exec.Cmd
	nginxDone  chan struct{}
	databases  []string
	httpClient *http.Client

	// nginxTmpl and nginxData rendered the gateway's configuration; kept so
	// RouteUpstream can render it again with other upstream servers.
	nginxTmpl *template.Template
	nginxData map[string]any
}

// InternalAuthKey is the key the services sign their calls to each other
// with (INTERNAL_AUTH_KEY): a test signs with it as a peer service would.
func (s *Stack) InternalAuthKey() string { return s.cfg.InternalAuthKey }

// FindRoot is the repository's root (testkit.RepoRoot).
func FindRoot() (string, error) { return testkit.RepoRoot() }

// Available lists the services whose main package exists in the tree.
func Available(root string) []string {
	var out []string
	for _, name := range ServiceNames {
		if _, err := os.Stat(filepath.Join(root, "services", name, "main.go")); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// Build compiles the available services into dir/bin.
func Build(ctx context.Context, root, dir string) error {
	names := Available(root)
	if len(names) == 0 {
		return errors.New("no service has a main.go yet")
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-o", bin + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./services/"+n)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

func randomSecret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *Config) defaults() error {
	if c.Root == "" {
		root, err := FindRoot()
		if err != nil {
			return err
		}
		c.Root = root
	}
	if c.Dir == "" {
		return errors.New("stack: Dir is required")
	}
	if c.AdminDatabaseURL == "" {
		u, err := testkit.AdminURL()
		if err != nil {
			return err
		}
		c.AdminDatabaseURL = u
	}
	if c.DatabasePrefix == "" {
		c.DatabasePrefix = "e2e_" + randomSecret(4)
	}
	if c.KeyEncryptionKey == "" {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		c.KeyEncryptionKey = base64.StdEncoding.EncodeToString(b)
	}
	if c.ClientSecretKey == "" {
		c.ClientSecretKey = randomSecret(32)
	}
	if c.CursorKey == "" {
		c.CursorKey = randomSecret(32)
	}
	if c.InternalAuthKey == "" {
		c.InternalAuthKey = randomSecret(32)
	}
	if c.ConventionID == "" {
		c.ConventionID = "2026"
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	return nil
}

func port(fixed, offset int) (int, error) {
	if fixed != 0 {
		return fixed + offset, nil
	}
	return testkit.FreePort()
}

// Launch starts everything and waits until every service is ready and the
// gateway answers. On error, whatever was started is stopped.
func Launch(ctx context.Context, cfg Config) (s *Stack, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	s = &Stack{cfg: cfg, Dir: cfg.Dir, Services: map[string]*Service{}}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	say := func(format string, args ...any) { fmt.Fprintf(cfg.Stdout, format+"\n", args...) }

	names := Available(cfg.Root)
	if cfg.Build {
		say("building %s", strings.Join(names, ", "))
		if err := Build(ctx, cfg.Root, cfg.Dir); err != nil {
			return s, err
		}
	}

	// Redis.
	s.RedisURL = cfg.RedisURL
	if s.RedisURL == "" {
		rp, err := port(cfg.RedisPort, 0)
		if err != nil {
			return s, err
		}
		rdir := filepath.Join(cfg.Dir, "redis")
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return s, err
		}
		say("starting redis on 127.0.0.1:%d (AOF in %s)", rp, rdir)
		if s.redis, s.RedisURL, err = testkit.StartRedis(ctx, rdir, rp, true); err != nil {
			return s, err
		}
	}

	// Ports and URLs.
	httpPort, err := port(cfg.GatewayHTTPPort, 0)
	if err != nil {
		return s, err
	}
	tlsPort, err := port(cfg.GatewayTLSPort, 0)
	if err != nil {
		return s, err
	}
	s.GatewayURL = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	s.GatewayTLSURL = fmt.Sprintf("https://127.0.0.1:%d", tlsPort)
	s.Issuer = s.GatewayURL
	order := []string{"auth", "users", "volunteers", "registrations", "dealers"}
	for i, name := range order {
		pub, err := port(cfg.BasePort, i)
		if err != nil {
			return s, err
		}
		internal, err := port(map[bool]int{true: cfg.BasePort + 1000, false: 0}[cfg.BasePort != 0], i)
		if err != nil {
			return s, err
		}
		ops, err := port(map[bool]int{true: cfg.BasePort + 2000, false: 0}[cfg.BasePort != 0], i)
		if err != nil {
			return s, err
		}
		s.Services[name] = &Service{
			Name:        name,
			PublicURL:   fmt.Sprintf("http://127.0.0.1:%d", pub),
			InternalURL: fmt.Sprintf("http://127.0.0.1:%d", internal),
			OpsURL:      fmt.Sprintf("http://127.0.0.1:%d", ops),
			bin:         filepath.Join(cfg.Dir, "bin", name),
			logPath:     filepath.Join(cfg.Dir, "logs", name+".log"),
		}
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "logs"), 0o755); err != nil {
		return s, err
	}

	// Databases and environments.
	for _, name := range order {
		svc := s.Services[name]
		db := cfg.DatabasePrefix + "_" + name
		dsn, err := testkit.CreateDatabase(ctx, cfg.AdminDatabaseURL, db, cfg.RecreateDatabases)
		if err != nil {
			return s, err
		}
		s.databases = append(s.databases, db)
		svc.env = s.environment(name, dsn)
	}

	// Migrate and import, in import order.
	for _, name := range ServiceNames {
		if !contains(names, name) {
			continue
		}
		svc := s.Services[name]
		if _, err := svc.Run(ctx, nil, "migrate", "up"); err != nil {
			return s, err
		}
		if cfg.Fixture != "" {
			say("importing %s into %s", filepath.Base(cfg.Fixture), name)
			if _, err := svc.Run(ctx, nil, "import", cfg.Fixture); err != nil {
				return s, err
			}
		}
	}

	// Services: auth first, since the others are ready only once they have
	// fetched its signing keys.
	var rest []string
	if contains(names, "auth") {
		if err := s.Services["auth"].Start(); err != nil {
			return s, err
		}
		if err := s.Services["auth"].WaitReady(ctx, 60*time.Second); err != nil {
			return s, err
		}
	}
	for _, name := range ServiceNames {
		if name == "auth" || !contains(names, name) {
			continue
		}
		if err := s.Services[name].Start(); err != nil {
			return s, err
		}
		rest = append(rest, name)
	}
	for _, name := range rest {
		if err := s.Services[name].WaitReady(ctx, 60*time.Second); err != nil {
			return s, err
		}
	}

	// Gateway.
	if err := s.startNginx(ctx, httpPort, tlsPort); err != nil {
		return s, err
	}
	return s, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Stack) environment(name, dsn string) []string {
	c := s.cfg
	svc := s.Services[name]
	env := map[string]string{
		"PUBLIC_ADDR":             strings.TrimPrefix(svc.PublicURL, "http://"),
		"INTERNAL_ADDR":           strings.TrimPrefix(svc.InternalURL, "http://"),
		"OPS_ADDR":                strings.TrimPrefix(svc.OpsURL, "http://"),
		"INTERNAL_AUTH_KEY":       c.InternalAuthKey,
		"DATABASE_URL":            dsn,
		"REDIS_URL":               s.RedisURL,
		"LOG_LEVEL":               "info",
		"AUTH_ISSUER":             s.Issuer,
		"AUTH_JWKS_URL":           s.Services["auth"].InternalURL + "/.well-known/jwks.json",
		"TOKEN_AUDIENCE":          "eventreg-api",
		"CURSOR_KEY":              c.CursorKey,
		"CONVENTION_ID":           c.ConventionID,
		"KEY_ENCRYPTION_KEY":      c.KeyEncryptionKey,
		"CLIENT_SECRET_KEY":       c.ClientSecretKey,
		"USERS_INTERNAL_URL":      s.Services["users"].InternalURL,
		"VOLUNTEERS_INTERNAL_URL": s.Services["volunteers"].InternalURL,
		"AUTH_INTERNAL_URL":       s.Services["auth"].InternalURL,
		"SHUTDOWN_TIMEOUT":        "10s",
	}
	// users forwards the sub-resources volunteers and registrations own (decision 0085).
	env["VOLUNTEERS_PUBLIC_URL"] = s.Services["volunteers"].PublicURL
	env["REGISTRATIONS_PUBLIC_URL"] = s.Services["registrations"].PublicURL
	for k, v := range c.Env {
		env[k] = v
	}
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TZ=UTC"}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_TRACES_SAMPLER"} {
		if v, ok := os.LookupEnv(k); ok {
			if _, set := env[k]; !set {
				out = append(out, k+"="+v)
			}
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// httpsOrigin is the origin of the issuer when it is https (then plain-HTTP
// /oauth/ is redirected there), else empty: the local stack's issuer is the
// http gateway URL, so its browser flows stay on http.
func (s *Stack) httpsOrigin() string {
	issuer := s.Issuer
	if v, ok := s.cfg.Env["AUTH_ISSUER"]; ok {
		issuer = v
	}
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return ""
	}
	return "https://" + u.Host
}

// Env returns the service's environment (KEY=VALUE lines), e.g. to run its
// admin commands by hand.
func (svc *Service) Env() []string { return append([]string(nil), svc.env...) }

// Run executes `<service> args...` with the service's environment.
func (svc *Service) Run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, svc.bin, args...)
	cmd.Env = svc.env
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v\n%s%s", svc.Name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// Start launches `serve` in the background, logging to the service's log file.
func (svc *Service) Start() error {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	logf, err := os.OpenFile(svc.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(svc.bin, "serve")
	cmd.Env = svc.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", svc.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	svc.cmd, svc.done = cmd, done
	return nil
}

// WaitReady polls the ops listener's /readyz until it answers 200.
func (svc *Service) WaitReady(ctx context.Context, timeout time.Duration) error {
	err := testkit.Poll(ctx, timeout, func(ctx context.Context) error {
		svc.mu.Lock()
		done := svc.done
		svc.mu.Unlock()
		select {
		case <-done:
			return errExited
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, svc.OpsURL+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz %d: %s", resp.StatusCode, body)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %v\nlast log lines:\n%s", svc.Name, err, svc.LogTail(30))
	}
	return nil
}

var errExited = errors.New("process exited")

// Stop sends SIGTERM and waits for the process to exit.
func (svc *Service) Stop() { svc.signal(syscall.SIGTERM) }

// Kill sends SIGKILL, as a crash would.
func (svc *Service) Kill() { svc.signal(syscall.SIGKILL) }

// Signal sends sig without waiting.
func (svc *Service) Signal(sig syscall.Signal) {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.cmd != nil && svc.cmd.Process != nil {
		_ = svc.cmd.Process.Signal(sig)
	}
}

// Wait waits for the process to exit.
func (svc *Service) Wait() {
	svc.mu.Lock()
	done := svc.done
	svc.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (svc *Service) signal(sig syscall.Signal) {
	svc.mu.Lock()
	cmd, done := svc.cmd, svc.done
	svc.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Running reports whether the process is alive.
func (svc *Service) Running() bool {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.done == nil {
		return false
	}
	select {
	case <-svc.done:
		return false
	default:
		return true
	}
}

// LogTail returns the last n lines of the service's log.
func (svc *Service) LogTail(n int) string {
	b, err := os.ReadFile(svc.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogPath is where the service logs.
func (svc *Service) LogPath() string { return svc.logPath }

func (s *Stack) startNginx(ctx context.Context, httpPort, tlsPort int) error {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr == nil {
			nginx = "/usr/sbin/nginx"
		} else {
			return errors.New("nginx not found: install Debian's nginx-light (or nginx) package")
		}
	}
	prefix := filepath.Join(s.Dir, "nginx")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return err
	}
	cert, key, err := writeCertificate(prefix)
	if err != nil {
		return err
	}
	s.CertFile = cert
	tmplText, err := os.ReadFile(filepath.Join(s.cfg.Root, "deploy", "nginx", "nginx.conf.tmpl"))
	if err != nil {
		return err
	}
	tmpl, err := template.New("nginx").Parse(string(tmplText))
	if err != nil {
		return fmt.Errorf("parsing nginx template: %w", err)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "root root" // workers must reach the temp dirs this process owns
	}
	host := func(u string) string { return strings.TrimPrefix(u, "http://") }
	data := map[string]any{
		"Prefix": prefix, "HTTPListen": "127.0.0.1:" + strconv.Itoa(httpPort), "TLSListen": "127.0.0.1:" + strconv.Itoa(tlsPort),
		"CertFile": cert, "KeyFile": key, "ErrorLog": filepath.Join(prefix, "error.log"), "AccessLog": filepath.Join(prefix, "access.log"),
		"Auth": host(s.Services["auth"].PublicURL), "Users": host(s.Services["users"].PublicURL),
		"Volunteers": host(s.Services["volunteers"].PublicURL), "Registrations": host(s.Services["registrations"].PublicURL),
		"Dealers": host(s.Services["dealers"].PublicURL),
		"Daemon":  false, "User": user, "HTTPSOrigin": s.httpsOrigin(),
	}
	var conf bytes.Buffer
	if err := tmpl.Execute(&conf, data); err != nil {
		return fmt.Errorf("rendering nginx config: %w", err)
	}
	confPath := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o644); err != nil {
		return err
	}
	s.nginxTmpl, s.nginxData = tmpl, data
	errLog := filepath.Join(prefix, "error.log")
	cmd := exec.Command(nginx, "-p", prefix, "-c", confPath, "-e", errLog)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting nginx: %w", err)
	}
	s.nginx = cmd
	s.nginxDone = make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.nginxDone) }()
	err = testkit.Poll(ctx, 20*time.Second, func(ctx context.Context) error {
		select {
		case <-s.nginxDone:
			b, _ := os.ReadFile(errLog)
			return fmt.Errorf("nginx exited: %s", b)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.GatewayURL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("gateway / answered %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("gateway not ready: %w", err)
	}
	return nil
}

// Close stops nginx, the services and a started Redis. Databases stay (see
// DropDatabases).
func (s *Stack) Close() {
	if s.nginx != nil && s.nginx.Process != nil {
		_ = s.nginx.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.nginxDone:
		case <-time.After(10 * time.Second):
			_ = s.nginx.Process.Kill()
			<-s.nginxDone
		}
	}
	var wg sync.WaitGroup
	for _, svc := range s.Services {
		wg.Add(1)
		go func() { defer wg.Done(); svc.Stop() }()
	}
	wg.Wait()
	if s.redis != nil {
		_ = s.redis.Stop()
	}
}

// DropDatabases drops the per-service databases.
func (s *Stack) DropDatabases() {
	for _, db := range s.databases {
		testkit.DropDatabase(s.cfg.AdminDatabaseURL, db)
	}
}

// RedisProcess is the Redis the stack started (nil when it uses an existing one).
func (s *Stack) RedisProcess() *testkit.Process { return s.redis }

// PID is the process id of the running service (0 when not running).
func (svc *Service) PID() int {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.cmd == nil || svc.cmd.Process == nil {
		return 0
	}
	return svc.cmd.Process.Pid
}

// NginxPID is the process id of the gateway's master process.
func (s *Stack) NginxPID() int {
	if s.nginx == nil || s.nginx.Process == nil {
		return 0
	}
	return s.nginx.Process.Pid
}

// AdminDatabaseURL is the PostgreSQL server the stack's databases live on.
func (s *Stack) AdminDatabaseURL() string { return s.cfg.AdminDatabaseURL }

// DatabaseURL returns the DSN of a service's database.
func (s *Stack) DatabaseURL(service string) string {
	for _, kv := range s.Services[service].env {
		if strings.HasPrefix(kv, "DATABASE_URL=") {
			return strings.TrimPrefix(kv, "DATABASE_URL=")
		}
	}
	return ""
}
