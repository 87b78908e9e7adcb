package deploytest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGatewayRoutesLive starts the real nginx with the rendered template in
// front of four stand-in upstreams and sends every contract path through it.
// It proves the route table and, by agreeing with it, the location matcher the
// Ingress comparison relies on.
func TestGatewayRoutesLive(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (apt-get install nginx-light); the route table is still checked by TestRouteTableAgreesWithContract")
	}
	endpoints := readEndpoints(t)
	locs := serverLocations(t, parseNginx(t, renderGateway(t, composeGateway)))

	upstream := standInUpstreams(t, func(w http.ResponseWriter, r *http.Request) {})

	httpAddr, tlsAddr := freeAddr(t), freeAddr(t)
	startGateway(t, nginx, httpAddr, tlsAddr, upstream, "")

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's own self-signed certificate
	}}
	get := func(base, uri string) (status int, servedBy, body string) {
		t.Helper()
		resp, err := client.Get(base + uri)
		if err != nil {
			t.Fatalf("GET %s%s: %v", base, uri, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("X-Upstream"), string(b)
	}

	for _, e := range endpoints {
		uri := samplePath(e.Path)
		status, servedBy, _ := get("http://"+httpAddr, uri)
		loc, _ := matchLocation(locs, uri)
		switch {
		case e.Service == "gateway" && servedBy == "":
			if status != http.StatusOK || loc.target != "return 200" {
				t.Errorf("%s: nginx answered %d itself; the matcher picked %v (%s)", uri, status, loc, loc.target)
			}
		case e.Service == "gateway":
			if servedBy != "users" || loc.target != "users" {
				t.Errorf("%s: served by %q, matcher says %q; want users", uri, servedBy, loc.target)
			}
		default:
			// users answers the sub-resources it forwards to their owners (decision 0085).
			if want := answeredBy(e); servedBy != want {
				t.Errorf("%s %s: served by %q (status %d), want %s", e.Method, uri, servedBy, status, want)
			}
			if loc.target != servedBy {
				t.Errorf("%s: the location matcher picked %v (%s) but nginx sent it to %q", uri, loc, loc.target, servedBy)
			}
		}
	}
	for _, uri := range notRouted {
		status, servedBy, body := get("http://"+httpAddr, uri)
		if status != http.StatusNotFound || servedBy != "" || !strings.Contains(body, `"errors"`) {
			t.Errorf("%s: status %d, upstream %q, body %q; want the gateway's JSON 404", uri, status, servedBy, body)
		}
	}
	if status, servedBy, _ := get("https://"+tlsAddr, "/.well-known/jwks.json"); status != http.StatusOK || servedBy != "auth" {
		t.Errorf("TLS listener: /.well-known/jwks.json got %d from %q, want 200 from auth", status, servedBy)
	}
}

// startGateway renders the template for the listeners and upstreams given
// and runs the real nginx with it until the test ends.
func startGateway(t *testing.T, nginx, httpAddr, tlsAddr string, upstream map[string]string, httpsOrigin string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := writeSelfSignedCert(t, dir)
	conf := renderGateway(t, gatewayParams{
		Prefix: dir, HTTPListen: httpAddr, TLSListen: tlsAddr, CertFile: certFile, KeyFile: keyFile,
		Auth: upstream["auth"], Users: upstream["users"], Volunteers: upstream["volunteers"], Registrations: upstream["registrations"],
		Dealers: upstream["dealers"],
		Daemon:  false, ErrorLog: filepath.Join(dir, "error.log"), AccessLog: filepath.Join(dir, "access.log"), HTTPSOrigin: httpsOrigin,
	})
	confFile := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its own process group, so the workers go with the master; output to files,
	// since a worker would otherwise hold the test's stdout open.
	cmd := exec.Command(nginx, "-p", dir, "-e", filepath.Join(dir, "startup.log"), "-c", confFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting nginx: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { stopNginx(t, cmd, exited) })
	waitListening(t, httpAddr, exited, dir)
}

// TestNginxHTTPS: over TLS every answer carries HSTS, error pages
// included; over plain http none does; and when the public origin is https,
// plain-HTTP /oauth/ is a 308 there while the API stays reachable over http.
func TestNginxHTTPS(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (apt-get install nginx-light)")
	}
	upstream := standInUpstreams(t, func(w http.ResponseWriter, r *http.Request) {})
	upstream["registrations"] = freeAddr(t) // nothing listens: the gateway's 503 page
	httpAddr, tlsAddr := freeAddr(t), freeAddr(t)
	origin := "https://" + tlsAddr
	startGateway(t, nginx, httpAddr, tlsAddr, upstream, origin)

	client := &http.Client{Timeout: 5 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // the test's own self-signed certificate
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(t *testing.T, u string) *http.Response {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	t.Run("every answer over TLS carries Strict-Transport-Security, error answers included", func(t *testing.T) {
		for uri, status := range map[string]int{"/.well-known/jwks.json": 200, "/oauth/authorize": 200, "/": 200, "/nope": 404,
			"/api/v0/registration/search": 503} {
			resp := get(t, origin+uri)
			if resp.StatusCode != status || resp.Header.Get("Strict-Transport-Security") != "max-age=31536000" {
				t.Errorf("%s: %d, Strict-Transport-Security %q", uri, resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
			}
		}
	})
	t.Run("plain http carries no HSTS and still serves the API", func(t *testing.T) {
		resp := get(t, "http://"+httpAddr+"/api/v0/roles")
		if resp.StatusCode != 200 || resp.Header.Get("X-Upstream") != "users" || resp.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("%d from %q, HSTS %q", resp.StatusCode, resp.Header.Get("X-Upstream"), resp.Header.Get("Strict-Transport-Security"))
		}
	})
	t.Run("plain-HTTP /oauth/ is a 308 to the https origin, path and query kept", func(t *testing.T) {
		resp := get(t, "http://"+httpAddr+"/oauth/authorize?client_id=502&state=a%20b")
		if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != origin+"/oauth/authorize?client_id=502&state=a%20b" ||
			resp.Header.Get("X-Upstream") != "" {
			t.Errorf("%d Location %q from %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("X-Upstream"))
		}
		if resp := get(t, origin+"/oauth/authorize"); resp.StatusCode != 200 || resp.Header.Get("X-Upstream") != "auth" {
			t.Errorf("over TLS /oauth/ is not served by auth: %d %q", resp.StatusCode, resp.Header.Get("X-Upstream"))
		}
	})
	t.Run("without an https origin, plain-HTTP /oauth/ is served", func(t *testing.T) {
		plainHTTP, plainTLS := freeAddr(t), freeAddr(t)
		startGateway(t, nginx, plainHTTP, plainTLS, upstream, "")
		if resp := get(t, "http://"+plainHTTP+"/oauth/authorize"); resp.StatusCode != 200 || resp.Header.Get("X-Upstream") != "auth" {
			t.Errorf("%d from %q", resp.StatusCode, resp.Header.Get("X-Upstream"))
		}
	})
}

// stopNginx asks nginx to quit (SIGTERM: fast shutdown, workers included) and
// kills its process group if it has not gone within the deadline.
func stopNginx(t *testing.T, cmd *exec.Cmd, exited <-chan error) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Log("nginx ignored SIGTERM for 5s; killing its process group")
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	// The master may exit before its workers; wait for the group to empty.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitListening polls until nginx accepts connections, with a deadline.
func waitListening(t *testing.T, addr string, exited <-chan error, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			start, _ := os.ReadFile(filepath.Join(dir, "startup.log"))
			t.Fatalf("nginx exited: %v\n%s%s", err, start, log)
		case <-ctx.Done():
			t.Fatalf("nginx did not listen on %s within 10s", addr)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func writeSelfSignedCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, block := range map[string]*pem.Block{
		certFile: {Type: "CERTIFICATE", Bytes: der},
		keyFile:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(f, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(fmt.Errorf("writing %s: %w", f, err))
		}
	}
	return certFile, keyFile
}

// TestGatewaySendsCookiesOnlyToTheSignInPages: the browser sends auth's
// session cookie (Path=/) with every request to the API's origin; the
// gateway passes it on only to auth's pages under /oauth/, so no resource
// service (nor its logs, traces or forwards) ever holds a session.
func TestGatewaySendsCookiesOnlyToTheSignInPages(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (apt-get install nginx-light)")
	}
	upstream := standInUpstreams(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cookie-Seen", strconv.FormatBool(r.Header.Get("Cookie") != ""))
	})
	httpAddr, tlsAddr := freeAddr(t), freeAddr(t)
	startGateway(t, nginx, httpAddr, tlsAddr, upstream, "")

	client := &http.Client{Timeout: 5 * time.Second}
	for _, e := range readEndpoints(t) {
		uri := samplePath(e.Path)
		req, _ := http.NewRequest(http.MethodGet, "http://"+httpAddr+uri, nil)
		req.Header.Set("Cookie", "__Host-eventreg_session=secret-session-id; other=1")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", uri, err)
		}
		resp.Body.Close()
		servedBy, seen := resp.Header.Get("X-Upstream"), resp.Header.Get("X-Cookie-Seen") == "true"
		if servedBy == "" {
			continue // answered by the gateway itself
		}
		if want := strings.HasPrefix(uri, "/oauth/"); seen != want {
			t.Errorf("%s (served by %s): cookie passed on %v, want %v", uri, servedBy, seen, want)
		}
	}
}

// standInUpstreams starts a server per service that answers with its name
// (X-Upstream header and body) after extra has set what a test looks for,
// and returns their addresses by service.
func standInUpstreams(t *testing.T, extra http.HandlerFunc) map[string]string {
	upstream := map[string]string{}
	for _, svc := range services {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Upstream", svc)
			extra(w, r)
			_, _ = io.WriteString(w, svc)
		}))
		t.Cleanup(srv.Close)
		upstream[svc] = srv.Listener.Addr().String()
	}
	return upstream
}
