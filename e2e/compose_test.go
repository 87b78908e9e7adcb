package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/eventreg/eventreg/libs/testkit"
)

// composeProject is the project name of the stack under test: not the file's
// "eventreg", so a stack a developer runs from the same file is left alone.
const composeProject = "eventreg-test"

// composeStack is the project's docker-compose.yaml brought up for real.
type composeStack struct {
	t                 *testing.T
	root              string
	env               []string
	httpURL, httpsURL string
	jaegerURL, issuer string
	https             *http.Client // trusts the gateway's self-signed certificate
}

func (c *composeStack) compose(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", append([]string{"compose", "-p", composeProject}, args...)...)
	cmd.Dir, cmd.Env = c.root, c.env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (c *composeStack) mustCompose(args ...string) string {
	c.t.Helper()
	out, err := c.compose(args...)
	if err != nil {
		c.t.Fatalf("docker compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// lastLines is the end of a command's output.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestCompose brings the project's own docker-compose.yaml up with `docker
// compose up --build --wait` (COMPOSE_FILE adds deploy/standins/compose.yaml
// where nothing can be pulled), on published ports other than the defaults,
// and drives it as developers and their apps do, through the gateway on HTTP
// and HTTPS; then `docker compose down -v` must leave nothing behind.
func TestCompose(t *testing.T) {
	needContainers(t)
	httpPort, httpsPort, jaegerPort := freePort(t), freePort(t), freePort(t)
	c := &composeStack{t: t, root: repoRoot(t),
		httpURL:   fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		httpsURL:  fmt.Sprintf("https://127.0.0.1:%d", httpsPort),
		jaegerURL: fmt.Sprintf("http://127.0.0.1:%d", jaegerPort),
	}
	c.issuer = c.httpsURL
	c.env = append(os.Environ(), "EVENTREG_HTTP_PORT="+strconv.Itoa(httpPort),
		"EVENTREG_HTTPS_PORT="+strconv.Itoa(httpsPort), "EVENTREG_JAEGER_PORT="+strconv.Itoa(jaegerPort))

	_, _ = c.compose("down", "-v", "--remove-orphans") // a stack an interrupted run left
	began := time.Now()
	if out, err := c.compose("up", "--build", "--wait", "--wait-timeout", "600"); err != nil {
		logs, _ := c.compose("logs", "--no-color", "--tail", "40")
		ps, _ := c.compose("ps", "-a")
		t.Fatalf("docker compose up --build --wait: %v\n%s\n%s\n%s", err, lastLines(out, 40), ps, logs)
	}
	t.Logf("compose up --build --wait: %s", time.Since(began).Round(time.Second))
	recorder := ""
	downed := false
	t.Cleanup(func() {
		if recorder != "" {
			_, _ = dockerTry("rm", "-f", recorder)
		}
		if !downed {
			_, _ = c.compose("down", "-v", "--remove-orphans")
		}
	})

	t.Run("every health check passes inside its container", func(t *testing.T) { c.healthChecks(t) })

	// The gateway's certificate, from its volume: HTTPS is verified, not skipped.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(c.mustCompose("exec", "-T", "gateway", "cat", "/etc/nginx/tls/tls.crt"))) {
		t.Fatal("the gateway's certificate does not parse")
	}
	c.https = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	for _, gw := range []struct {
		name, url string
		client    *http.Client
	}{{"http", c.httpURL, &http.Client{Timeout: 10 * time.Second}}, {"https", c.httpsURL, c.https}} {
		t.Run("client credentials and a user read over "+gw.name, func(t *testing.T) {
			ctx := context.WithValue(context.Background(), oauth2.HTTPClient, gw.client)
			cc := clientCredentials(gw.url, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read")
			tok, err := cc.Token(ctx)
			if err != nil {
				t.Fatalf("client credentials: %v", err)
			}
			req, _ := newRequest(gw.url, http.MethodGet, "/api/v0/users/1001", tok.AccessToken, "")
			if r := mustDo(t, gw.client, req); r.status != http.StatusOK || !strings.Contains(r.body, `"id"`) {
				t.Fatalf("GET /api/v0/users/1001: %d %s", r.status, r.body)
			}
		})
	}

	t.Run("OBO flow signed in by Chromium, from the plain-HTTP origin to the published HTTPS port", func(t *testing.T) {
		c.oboFlow(t)
	})

	t.Run("a webhook is delivered, signed, to a receiver container", func(t *testing.T) {
		recorder = c.webhook(t)
	})

	t.Run("a request's trace is in Jaeger", func(t *testing.T) { c.trace(t) })

	t.Run("down -v leaves no container, network or volume", func(t *testing.T) {
		if recorder != "" {
			docker(t, "rm", "-f", recorder)
			recorder = ""
		}
		c.mustCompose("down", "-v", "--remove-orphans")
		downed = true
		filter := "label=com.docker.compose.project=" + composeProject
		for _, kind := range [][]string{{"ps", "-a"}, {"network", "ls"}, {"volume", "ls"}} {
			if left := docker(t, append(kind, "-q", "--filter", filter)...); left != "" {
				t.Errorf("docker %s after down -v: %s", strings.Join(kind, " "), left)
			}
		}
	})
}

// healthChecks: each container with a health check reports healthy, and each
// one-shot exited 0.
func (c *composeStack) healthChecks(t *testing.T) {
	out := c.mustCompose("ps", "-a", "--format", "{{.Service}}|{{.State}}|{{.Health}}|{{.ExitCode}}")
	checked := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			continue
		}
		svc, state, health, code := f[0], f[1], f[2], f[3]
		switch {
		case strings.HasPrefix(svc, "migrate-") || strings.HasPrefix(svc, "import-") || svc == "gateway-cert":
			if state != "exited" || code != "0" {
				t.Errorf("one-shot %s: %s, exit %s", svc, state, code)
			}
		case svc == "otel-collector" || svc == "jaeger": // no health check: FROM-scratch images
			if state != "running" {
				t.Errorf("%s: %s", svc, state)
			}
		default:
			checked++
			if state != "running" || health != "healthy" {
				t.Errorf("%s: %s/%s", svc, state, health)
			}
		}
	}
	if checked != 8 { // postgres, redis, the five services, the gateway
		t.Errorf("%d containers with health checks, want 8:\n%s", checked, out)
	}
	// The resource services start after auth is healthy: their first JWKS
	// fetch and revocation poll succeed.
	logs := c.mustCompose("logs", "--no-color", "users", "volunteers", "registrations")
	for _, failure := range []string{"fetching the JWKS failed", "polling the revocation feed failed"} {
		if strings.Contains(logs, failure) {
			t.Errorf("a resource service logged %q at start", failure)
		}
	}
}

// oboFlow signs alice in with Chromium. The app sends her to the plain-HTTP
// origin, whose /oauth/ pages redirect to the HTTPS origin on its published
// port (the issuer), where she signs in and consents; the app exchanges the
// code over verified HTTPS.
func (c *composeStack) oboFlow(t *testing.T) {
	cb := startAuthCallback(t)
	ctx := chromium(t, chromedp.Flag("ignore-certificate-errors", true))
	app := authApp(c.httpURL, authBadgeID, authBadgeSecret, "pii:basic", "pii:email")
	app.Endpoint.TokenURL = c.httpsURL + "/api/oauth/token"
	verifier := oauth2.GenerateVerifier()
	var landed string
	run(t, ctx,
		toConsent(app.AuthCodeURL("compose-state", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass),
		chromedp.Location(&landed),
		authorizeApp(),
	)
	if !strings.HasPrefix(landed, c.httpsURL+"/oauth/") {
		t.Errorf("the consent page is at %s, want the HTTPS origin %s", landed, c.httpsURL)
	}
	q := cb.wait(t)
	if q.Get("state") != "compose-state" || q.Get("code") == "" || q.Get("iss") != c.issuer {
		t.Fatalf("callback %v (issuer %s)", q, c.issuer)
	}
	tok, err := app.Exchange(context.WithValue(context.Background(), oauth2.HTTPClient, c.https), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	req, _ := newRequest(c.httpsURL, http.MethodGet, "/api/users/current", tok.AccessToken, "")
	r := mustDo(t, c.https, req)
	var me map[string]any
	_ = json.Unmarshal([]byte(r.body), &me)
	if r.status != http.StatusOK || me["username"] != "alice" {
		t.Fatalf("GET /api/users/current: %d %s", r.status, r.body)
	}
}

// webhook starts a receiver container on the stack's network, subscribes the
// tracker app to it, changes a user's roles through the gateway, and verifies
// the delivery as an app would (the gateway's JWKS, the body digest). It
// returns the receiver container's name.
func (c *composeStack) webhook(t *testing.T) string {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "hookrecorder"), "./cmd/hookrecorder")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the receiver: %v\n%s", err, out)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := composeProject + "-hookrecorder"
	_, _ = dockerTry("rm", "-f", name)
	// any static binary runs on the service images (distroless): no image to pull
	docker(t, append(append([]string{"run", "-d", "--name", name, "--network", composeProject + "_default", "-p", "127.0.0.1::8080",
		"-v", dir + ":/hook:ro", "--entrypoint", "/hook/hookrecorder"}, hardened...), serviceImage("auth"))...)
	hostPort := docker(t, "port", name, "8080/tcp")
	recorded := "http://" + strings.TrimSpace(strings.Split(hostPort, "\n")[0]) + "/recorded"

	hc := &http.Client{Timeout: 10 * time.Second}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	tok, err := clientCredentials(c.httpURL, trackerID, trackerSecret, oauth2.AuthStyleInHeader,
		"webhook:manage", "user:roles:update", "user:read").Token(ctx)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	send := func(method, path, body string) (int, string) {
		req, _ := newRequest(c.httpURL, method, path, tok.AccessToken, body)
		r := mustDo(t, hc, req)
		return r.status, r.body
	}
	target := fmt.Sprintf("http://%s:8080/hooks/%s", name, trackerID)
	if status, body := send(http.MethodPost, "/api/v0/webhooks", `{"url":"`+target+`","events":["user-updated"]}`); status != http.StatusCreated {
		t.Fatalf("subscribing %s: %d %s", target, status, body)
	}
	if status, body := send(http.MethodPut, "/api/v0/users/1002/roles/5", `{"scope":"convention"}`); status/100 != 2 {
		t.Fatalf("PUT role: %d %s", status, body)
	}

	verifier := &webhookReceiver{t: t, jwksURL: c.httpURL + "/.well-known/jwks.json", issuer: c.issuer}
	eventually(t, 60*time.Second, "a verified user-updated delivery for user 1002", func() error {
		resp, err := hc.Get(recorded)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var got []struct {
			Path   string
			Header http.Header
			Body   []byte
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			return err
		}
		for _, r := range got {
			token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			claims, err := verifier.verify(trackerID, token, r.Body)
			if err != nil {
				return fmt.Errorf("a delivery does not verify: %w", err)
			}
			var payload struct {
				Data struct {
					ID any `json:"id"`
				} `json:"data"`
			}
			_ = json.Unmarshal(r.Body, &payload)
			if claims.Event == "user-updated" && fmt.Sprint(payload.Data.ID) == "1002" {
				return nil
			}
		}
		return fmt.Errorf("%d deliveries, none for user 1002 yet", len(got))
	})
	return name
}

// trace sends a request with a traceparent through the gateway and finds its
// trace, with the services' spans, in Jaeger's query API.
func (c *composeStack) trace(t *testing.T) {
	hc := &http.Client{Timeout: 10 * time.Second}
	tok, err := clientCredentials(c.httpURL, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read").
		Token(context.WithValue(context.Background(), oauth2.HTTPClient, hc))
	if err != nil {
		t.Fatal(err)
	}
	header, traceID, _ := newTraceparent()
	req, _ := newRequest(c.httpURL, http.MethodGet, "/api/v0/users/1001", tok.AccessToken, "")
	req.Header.Set("traceparent", header)
	if r := mustDo(t, hc, req); r.status != http.StatusOK {
		t.Fatalf("GET /api/v0/users/1001: %d", r.status)
	}
	eventually(t, 60*time.Second, "trace "+traceID+" in Jaeger with users' spans", func() error {
		resp, err := hc.Get(c.jaegerURL + "/api/traces/" + traceID)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var body struct {
			Data []struct {
				Spans     []struct{ ProcessID string } `json:"spans"`
				Processes map[string]struct {
					ServiceName string `json:"serviceName"`
				} `json:"processes"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Data) == 0 {
			return fmt.Errorf("status %d, %v", resp.StatusCode, err)
		}
		services := map[string]int{}
		for _, s := range body.Data[0].Spans {
			services[body.Data[0].Processes[s.ProcessID].ServiceName]++
		}
		if services["users"] == 0 {
			return fmt.Errorf("spans by service: %v", services)
		}
		return nil
	})
}
