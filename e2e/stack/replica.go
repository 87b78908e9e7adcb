package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"
)

// StartReplica starts another process of a running service's binary on new
// free ports, with the same environment otherwise (database, Redis, keys),
// and waits until it is ready. It is what a second replica, or the next
// release rolled out beside the running one, looks like to the gateway. The
// caller stops it (Stop); the gateway sends it nothing until RouteUpstream.
func (s *Stack) StartReplica(ctx context.Context, name string) (*Service, error) {
	orig, ok := s.Services[name]
	if !ok {
		return nil, fmt.Errorf("no service %q in the stack", name)
	}
	pub, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	internal, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	ops, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	svc := &Service{
		Name:        name,
		PublicURL:   fmt.Sprintf("http://127.0.0.1:%d", pub),
		InternalURL: fmt.Sprintf("http://127.0.0.1:%d", internal),
		OpsURL:      fmt.Sprintf("http://127.0.0.1:%d", ops),
		bin:         orig.bin,
		logPath:     filepath.Join(s.Dir, "logs", fmt.Sprintf("%s-%d.log", name, pub)),
	}
	for _, kv := range orig.env {
		switch {
		case strings.HasPrefix(kv, "PUBLIC_ADDR="):
			kv = "PUBLIC_ADDR=" + strings.TrimPrefix(svc.PublicURL, "http://")
		case strings.HasPrefix(kv, "INTERNAL_ADDR="):
			kv = "INTERNAL_ADDR=" + strings.TrimPrefix(svc.InternalURL, "http://")
		case strings.HasPrefix(kv, "OPS_ADDR="):
			kv = "OPS_ADDR=" + strings.TrimPrefix(svc.OpsURL, "http://")
		}
		svc.env = append(svc.env, kv)
	}
	if err := svc.Start(); err != nil {
		return nil, err
	}
	if err := svc.WaitReady(ctx, 60*time.Second); err != nil {
		svc.Stop()
		return nil, err
	}
	return svc, nil
}

// upstreamKeys names each service's upstream in deploy/nginx/nginx.conf.tmpl.
var upstreamKeys = map[string]string{"auth": "Auth", "users": "Users", "volunteers": "Volunteers", "registrations": "Registrations", "dealers": "Dealers"}

// RouteUpstream makes the gateway send a service's requests to servers
// (host:port each, round robin): it renders the gateway's configuration again
// and reloads nginx with SIGHUP (`nginx -s reload`). nginx starts new workers
// on the new configuration and lets the old ones finish the requests they
// hold before they exit; RouteUpstream returns once they have exited, so
// from then on no request reaches a server that is no longer listed.
func (s *Stack) RouteUpstream(ctx context.Context, service string, servers ...string) error {
	key, ok := upstreamKeys[service]
	if !ok || len(servers) == 0 {
		return fmt.Errorf("routing %q to %v: unknown service or no server", service, servers)
	}
	if s.nginxTmpl == nil || s.NginxPID() == 0 {
		return errors.New("the gateway is not running")
	}
	data := maps.Clone(s.nginxData)
	// The template writes `server {{ .Volunteers }};`: more servers are the
	// same line repeated.
	data[key] = strings.Join(servers, "; server ")
	var conf bytes.Buffer
	if err := s.nginxTmpl.Execute(&conf, data); err != nil {
		return fmt.Errorf("rendering nginx config: %w", err)
	}
	prefix := data["Prefix"].(string)
	if err := os.WriteFile(filepath.Join(prefix, "nginx.conf"), conf.Bytes(), 0o644); err != nil {
		return err
	}
	s.nginxData = data

	old := nginxWorkers(s.NginxPID())
	if err := s.nginx.Process.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("reloading nginx: %w", err)
	}
	err := testkit.Poll(ctx, 20*time.Second, func(context.Context) error {
		now := nginxWorkers(s.NginxPID())
		if len(now) == 0 {
			return errors.New("no worker yet")
		}
		for pid := range now {
			if old[pid] {
				return fmt.Errorf("worker %d of the previous configuration still running", pid)
			}
		}
		return nil
	})
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
		return fmt.Errorf("nginx reload: %w\nerror.log:\n%s", err, tail(string(b), 20))
	}
	return nil
}

// nginxWorkers returns the process ids whose parent is master.
func nginxWorkers(master int) map[int]bool {
	out := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(master) {
			out[pid] = true
		}
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
