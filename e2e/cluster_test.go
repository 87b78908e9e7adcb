package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"
)

// TestCluster checks charts/eventreg on a real Kubernetes cluster from outside
// it: `make test-cluster` (deploy/scripts/test-cluster.sh) builds and loads the
// images, installs Traefik (Ingress and Gateway API) and a NetworkPolicy engine,
// makes the namespace with its Secret and certificate, and runs this test with
// EVENTREG_TEST_CLUSTER=1. The cluster is KUBECONFIG's; kubectl and helm come
// from PATH. Each step is a subtest; a failed step stops the ones that need it.
// What each step proves: docs/deployment.md, "Tried on a real cluster".
func TestCluster(t *testing.T) {
	if os.Getenv("EVENTREG_TEST_CLUSTER") != "1" {
		t.Skip("TestCluster needs a Kubernetes cluster: run `make test-cluster` (deploy/scripts/test-cluster.sh sets EVENTREG_TEST_CLUSTER=1)")
	}
	c := newCluster(t)

	must := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	must("install: helm install --wait runs the migration Jobs, every pod ready", c.install)
	t.Run("readiness: a pod of the chart is not ready before its schema and keys", c.readiness)
	must("helm test passes", c.helmTest)
	must("demo data imported (each service's import command, in the pods)", c.importDemo)
	t.Run("Ingress through Traefik: token, user read, forwarded paths", func(t *testing.T) { c.routeChecks(t, c.ingressURL) })
	t.Run("HTTPRoute through Traefik's Gateway: token, user read, forwarded paths", func(t *testing.T) { c.routeChecks(t, c.gatewayURL) })
	t.Run("OBO flow in headless Chromium through the Ingress", c.browserFlow)
	t.Run("NetworkPolicy: outsiders reach no internal port, PostgreSQL or Redis", c.networkPolicy)
	must("helm upgrade under load: no failed request, migration applied while the old pods serve", c.upgrade)
	t.Run("helm rollback under load: no failed request, no migration", c.rollback)
	t.Run("a pod of each service, then PostgreSQL, killed under load: recovery by itself, no acknowledged write lost", c.killPods)
}

// cluster is the installation under test, as the script describes it.
type cluster struct {
	chart, ns, release, tag, nextTag, nextSchema string
	host, nodeAddr, ingressPort, gatewayPort     string
	infraNS, gateway, ingressClass, fixture      string
	ingressURL, gatewayURL                       string
	valuesFile                                   string
	hc                                           *http.Client
	token                                        string // client credentials of the demo service client, all its scopes
}

func newCluster(t *testing.T) *cluster {
	env := func(k string) string {
		v := os.Getenv(k)
		if v == "" {
			t.Fatalf("%s is not set: run this test through deploy/scripts/test-cluster.sh", k)
		}
		return v
	}
	c := &cluster{
		chart: env("EVENTREG_CHART"), ns: env("EVENTREG_NAMESPACE"), release: env("EVENTREG_RELEASE"),
		tag: env("EVENTREG_IMAGE_TAG"), nextTag: env("EVENTREG_IMAGE_TAG_NEXT"), nextSchema: env("EVENTREG_NEXT_SCHEMA"),
		host: env("EVENTREG_HOST"), nodeAddr: env("EVENTREG_NODE_ADDR"),
		ingressPort: env("EVENTREG_INGRESS_PORT"), gatewayPort: env("EVENTREG_GATEWAY_PORT"),
		infraNS: env("EVENTREG_INFRA_NAMESPACE"), gateway: env("EVENTREG_GATEWAY"), ingressClass: env("EVENTREG_INGRESS_CLASS"),
		fixture: env("EVENTREG_FIXTURE"),
	}
	c.ingressURL = "https://" + c.host + ":" + c.ingressPort
	c.gatewayURL = "http://" + c.host + ":" + c.gatewayPort
	pem, err := os.ReadFile(env("EVENTREG_CA"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	// The route's host name is the node: every connection to it goes to the
	// node's address, keeping the port (the NodePorts of Traefik's entrypoints).
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	c.hc = &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, port, _ := net.SplitHostPort(addr)
				if host == c.host {
					addr = net.JoinHostPort(c.nodeAddr, port)
				}
				return dialer.DialContext(ctx, network, addr)
			},
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 16,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	// The chart trusts exactly the gateway (decision 0091): here the nodes'
	// pod networks, which only Traefik's pods may use to reach the public
	// port (publicFrom below).
	podCIDRs, err := c.run(30*time.Second, nil, "kubectl", "get", "nodes", "-o", "jsonpath={.items[*].spec.podCIDR}")
	if err != nil || strings.TrimSpace(podCIDRs) == "" {
		t.Fatalf("the nodes' pod CIDRs (for config.trustedProxies): %v %s", err, podCIDRs)
	}
	values := fmt.Sprintf(`config:
  issuer: %[1]s
  trustedProxies: %[7]q
serviceDefaults:
  replicas: 2
  autoscaling: {enabled: false}
  image: {tag: %[2]q}
ingress:
  className: %[3]s
  host: %[4]s
  annotations:
    traefik.ingress.kubernetes.io/router.entrypoints: websecure
  tls: {enabled: true, secretName: eventreg-tls}
httpRoute:
  enabled: true
  parentRefs: [{name: %[5]s, namespace: %[6]s, sectionName: http}]
  hostnames: [%[4]s]
networkPolicy:
  publicFrom:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[6]s}}
bundledPostgresql: {enabled: true}
bundledRedis: {enabled: true}
tests:
  publicRoute:
    url: https://traefik.%[6]s.svc
`, c.ingressURL, c.tag, c.ingressClass, c.host, c.gateway, c.infraNS, strings.Join(strings.Fields(podCIDRs), ","))
	c.valuesFile = filepath.Join(t.TempDir(), "values-cluster.yaml")
	if err := os.WriteFile(c.valuesFile, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("values:\n%s", values)
	return c
}

// run runs a command (kubectl, helm) with a time limit; it returns the output
// and the error, stdout and stderr together.
func (c *cluster) run(timeout time.Duration, stdin io.Reader, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: no end within %s", name, strings.Join(args, " "), timeout)
	}
	return out.String(), err
}

func (c *cluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.run(2*time.Minute, nil, "kubectl", append([]string{"-n", c.ns}, args...)...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (c *cluster) kubectlJSON(t *testing.T, into any, args ...string) {
	t.Helper()
	out, err := c.run(time.Minute, nil, "kubectl", append([]string{"-n", c.ns, "-o", "json"}, args...)...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
}

func (c *cluster) helm(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	out, err := c.run(timeout, nil, "helm", append(args, "-n", c.ns)...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (c *cluster) name(svc string) string { return c.release + "-" + svc }

var clusterServices = []string{"auth", "users", "volunteers", "registrations", "dealers"}

// k8sPod is what the test reads of a Pod.
type k8sPod struct {
	Metadata struct {
		Name              string            `json:"name"`
		Labels            map[string]string `json:"labels"`
		DeletionTimestamp *time.Time        `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
		ContainerStatuses []struct {
			Started      *bool `json:"started"`
			Ready        bool  `json:"ready"`
			RestartCount int   `json:"restartCount"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (p k8sPod) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

func (c *cluster) pods(t *testing.T, selector string) []k8sPod {
	t.Helper()
	var list struct{ Items []k8sPod }
	c.kubectlJSON(t, &list, "get", "pods", "-l", selector)
	return list.Items
}

func (c *cluster) servicePods(t *testing.T, svc string) []k8sPod {
	return c.pods(t, "app.kubernetes.io/instance="+c.release+",app.kubernetes.io/component="+svc)
}

// --- 1. install

func (c *cluster) install(t *testing.T) {
	start := time.Now()
	c.helm(t, 15*time.Minute, "install", c.release, c.chart, "-f", c.valuesFile, "--wait", "--timeout", "12m")
	t.Logf("helm install --wait: %s", time.Since(start).Round(time.Second))

	// the migration Jobs (pre-install hooks) completed
	for _, svc := range clusterServices {
		var job struct {
			Status struct {
				Succeeded      int        `json:"succeeded"`
				StartTime      *time.Time `json:"startTime"`
				CompletionTime *time.Time `json:"completionTime"`
			} `json:"status"`
		}
		c.kubectlJSON(t, &job, "get", "job", c.name(svc)+"-migrate")
		if job.Status.Succeeded != 1 || job.Status.CompletionTime == nil {
			t.Fatalf("job %s-migrate: %+v", c.name(svc), job.Status)
		}
		t.Logf("job %s-migrate: completed in %s", c.name(svc), job.Status.CompletionTime.Sub(*job.Status.StartTime))
	}
	// every pod of the release ready; the Jobs' pods have ended (an attempt made
	// before the bundled PostgreSQL accepted connections failed and was retried)
	failedAttempts := 0
	for _, p := range c.pods(t, "app.kubernetes.io/instance="+c.release) {
		if _, job := p.Metadata.Labels["job-name"]; job && (p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed") {
			if p.Status.Phase == "Failed" {
				failedAttempts++
			}
			for _, cs := range p.Status.ContainerStatuses {
				failedAttempts += cs.RestartCount
			}
			continue
		}
		if !p.ready() {
			t.Errorf("pod %s not ready: %+v", p.Metadata.Name, p.Status)
		}
	}
	t.Logf("migration attempts that failed and were retried by their Job: %d", failedAttempts)
	for _, svc := range clusterServices {
		if n := len(c.servicePods(t, svc)); n != 2 {
			t.Errorf("%s: %d pods, want 2", svc, n)
		}
	}
	// each service's schema is migrated, as `migrate status` reports it
	for _, svc := range clusterServices {
		out := c.kubectl(t, "exec", "deploy/"+c.name(svc), "-c", svc, "--", svc, "migrate", "status")
		if strings.Contains(out, "dirty=true") || !strings.Contains(out, "version") {
			t.Errorf("%s migrate status: %s", svc, out)
		}
		t.Logf("%s: %s", svc, strings.TrimSpace(out))
	}
}

// --- 2. readiness is honest

// readiness runs the chart's own auth pod (the Deployment's pod template, with
// its probes) against an empty database: it starts (liveness and startup pass)
// but stays unready, its /readyz answering 503, until `auth migrate up` has run
// in it; then the kubelet marks it ready. Its labels leave it out of the
// Services, so no request reaches it.
func (c *cluster) readiness(t *testing.T) {
	const db = "readiness_check"
	pg := c.name("postgresql") + "-0"
	psql := func(sql string) {
		c.kubectl(t, "exec", pg, "--", "sh", "-c", `PGPASSWORD="$POSTGRES_PASSWORD" psql -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1 -c "$0"`, sql)
	}
	psql("DROP DATABASE IF EXISTS " + db)
	psql("CREATE DATABASE " + db)
	t.Cleanup(func() {
		_, _ = c.run(time.Minute, nil, "kubectl", "-n", c.ns, "exec", pg, "--", "sh", "-c", `PGPASSWORD="$POSTGRES_PASSWORD" psql -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS `+db+` WITH (FORCE)"`)
	})

	var deploy struct {
		Spec struct {
			Template struct {
				Metadata map[string]any `json:"metadata"`
				Spec     map[string]any `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	c.kubectlJSON(t, &deploy, "get", "deployment", c.name("auth"))
	podSpec := deploy.Spec.Template.Spec
	labels := map[string]any{}
	for k, v := range deploy.Spec.Template.Metadata["labels"].(map[string]any) {
		labels[k] = v
	}
	labels["app.kubernetes.io/component"] = "readiness-check" // selected by no Service
	container := podSpec["containers"].([]any)[0].(map[string]any)
	replaced := false
	for _, e := range container["env"].([]any) {
		env := e.(map[string]any)
		if env["name"] == "DATABASE_URL" {
			v, _ := env["value"].(string)
			env["value"] = strings.Replace(v, "/auth?", "/"+db+"?", 1)
			replaced = env["value"] != v
		}
	}
	if !replaced {
		t.Fatal("DATABASE_URL of auth's pod template is not the bundled database's")
	}
	name := c.name("readiness-check")
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "labels": labels}, "spec": podSpec}
	manifest, _ := json.Marshal(pod)
	if out, err := c.run(time.Minute, bytes.NewReader(manifest), "kubectl", "-n", c.ns, "create", "-f", "-"); err != nil {
		t.Fatalf("creating %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		_, _ = c.run(time.Minute, nil, "kubectl", "-n", c.ns, "delete", "pod", name, "--grace-period=0", "--force", "--wait=false")
	})

	// started (its startup probe on /healthz passed), then unready for 3 readiness periods
	deadline := time.Now().Add(90 * time.Second)
	for {
		var p k8sPod
		c.kubectlJSON(t, &p, "get", "pod", name)
		if len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Started != nil && *p.Status.ContainerStatuses[0].Started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never started: %+v", name, p.Status)
		}
		time.Sleep(time.Second)
	}
	for end := time.Now().Add(16 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
		var p k8sPod
		c.kubectlJSON(t, &p, "get", "pod", name)
		if p.ready() {
			t.Fatalf("%s is ready on an empty database", name)
		}
	}
	out, err := c.run(time.Minute, nil, "kubectl", "-n", c.ns, "exec", name, "-c", "auth", "--", "auth", "healthcheck")
	if err == nil || !strings.Contains(out, "503") {
		t.Fatalf("auth healthcheck on an empty database: want a 503, got %v: %s", err, out)
	}
	t.Logf("started, unready for 16 s; /readyz: %s", strings.TrimSpace(out))

	migrated := time.Now()
	c.kubectl(t, "exec", name, "-c", "auth", "--", "auth", "migrate", "up")
	for {
		var p k8sPod
		c.kubectlJSON(t, &p, "get", "pod", name)
		if p.ready() {
			break
		}
		if time.Since(migrated) > 60*time.Second {
			out, _ := c.run(time.Minute, nil, "kubectl", "-n", c.ns, "exec", name, "-c", "auth", "--", "auth", "healthcheck")
			t.Fatalf("%s still unready 60 s after migrate up: %s", name, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("ready %s after `auth migrate up` (readiness period 5 s)", time.Since(migrated).Round(100*time.Millisecond))
}

// --- 3. helm test

func (c *cluster) helmTest(t *testing.T) {
	start := time.Now()
	out, err := c.run(5*time.Minute, nil, "helm", "test", c.release, "-n", c.ns, "--logs", "--timeout", "4m")
	if err != nil {
		t.Fatalf("helm test: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "ok:") || strings.HasPrefix(l, "Phase:") {
			lines = append(lines, l)
		}
	}
	t.Logf("helm test: %s\n%s", time.Since(start).Round(time.Second), strings.Join(lines, "\n"))
}

// --- 4. demo data

func (c *cluster) importDemo(t *testing.T) {
	// the order of docker-compose.yaml: users, auth, volunteers, registrations, dealers
	for _, svc := range []string{"users", "auth", "volunteers", "registrations", "dealers"} {
		f, err := os.Open(c.fixture)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.run(2*time.Minute, f, "kubectl", "-n", c.ns, "exec", "-i", "deploy/"+c.name(svc), "-c", svc, "--", svc, "import", "/dev/stdin")
		f.Close()
		if err != nil {
			t.Fatalf("%s import: %v\n%s", svc, err, out)
		}
	}
	tok, err := clientCredentials(c.ingressURL, trackerID, trackerSecret, oauth2.AuthStyleInHeader,
		"user:read", "user:roles:update", "volunteer:read", "registration:read").Token(context.WithValue(context.Background(), oauth2.HTTPClient, c.hc))
	if err != nil {
		t.Fatalf("a client-credentials token of the imported client %s: %v", trackerID, err)
	}
	c.token = tok.AccessToken
}

// --- 5. the public routes

func (c *cluster) send(base, method, path, token, body string) (reply, error) {
	req, err := newRequest(base, method, path, token, body)
	if err != nil {
		return reply{}, err
	}
	return do(c.hc, req)
}

// tokenGrant asks for a client-credentials token of the demo service client.
func (c *cluster) tokenGrant(base string) (reply, error) {
	return do(c.hc, newFormRequest(base, "/api/oauth/token", trackerID, trackerSecret,
		url.Values{"grant_type": {"client_credentials"}, "scope": {"volunteer:read"}}))
}

func (c *cluster) routeChecks(t *testing.T, base string) {
	// the server metadata names the issuer (the Ingress's URL) on either route
	r, err := c.send(base, "GET", "/.well-known/oauth-authorization-server", "", "")
	if err != nil || r.status != 200 || !strings.Contains(r.body, `"issuer":"`+c.ingressURL+`"`) {
		t.Fatalf("metadata through %s: %v %d %s", base, err, r.status, r.body)
	}
	tok, err := clientCredentials(base, trackerID, trackerSecret, oauth2.AuthStyleInHeader, "user:read", "volunteer:read", "registration:read").
		Token(context.WithValue(context.Background(), oauth2.HTTPClient, c.hc))
	if err != nil {
		t.Fatalf("client-credentials token through %s: %v", base, err)
	}
	for _, q := range []struct {
		method, path, body, want string
	}{
		{"GET", "/api/v0/users/1001", "", `alice`},
		{"GET", "/api/v0/roles", "", `staff`},
		{"GET", "/api/v0/users/1002/volunteer", "", ``},    // users forwards it to volunteers
		{"GET", "/api/v0/users/1001/registration", "", ``}, // ... and to registrations
		{"GET", "/api/v0/volunteers/departments", "", ``},
		{"POST", "/api/v0/registration/search", `{"limit": 5}`, ``},
	} {
		r, err := c.send(base, q.method, q.path, tok.AccessToken, q.body)
		if err != nil {
			t.Fatalf("%s %s through %s: %v", q.method, q.path, base, err)
		}
		if r.status != 200 || !strings.Contains(r.body, q.want) {
			t.Fatalf("%s %s through %s: %d %s", q.method, q.path, base, r.status, r.body)
		}
		t.Logf("%s %s: %d", q.method, q.path, r.status)
	}
	// the dealers service, the public configuration, the webhook key and the
	// OpenID Provider's documents are routed too
	desk, err := clientCredentials(base, dealerDeskID, dealerDeskSecret, oauth2.AuthStyleInHeader, "vendor:read").
		Token(context.WithValue(context.Background(), oauth2.HTTPClient, c.hc))
	if err != nil {
		t.Fatalf("Dealer Desk token through %s: %v", base, err)
	}
	for _, q := range []struct {
		method, path, token, body, want string
	}{
		{"POST", "/api/v0/dealers/search", desk.AccessToken, `{"limit": 2}`, `"hasMore":true`},
		{"GET", "/api/config", "", "", `"conventions":[`},
		{"GET", "/api/webhooks/key", "", "", "-----BEGIN PUBLIC KEY-----"},
		{"GET", "/.well-known/openid-configuration", "", "", `"userinfo_endpoint":"` + c.ingressURL + `/api/users/userinfo"`},
		{"GET", "/api/users/userinfo", tok.AccessToken, "", `error="insufficient_scope"`}, // routed to users, which wants openid
	} {
		r, err := c.send(base, q.method, q.path, q.token, q.body)
		if err != nil || !strings.Contains(r.body+r.header.Get("WWW-Authenticate"), q.want) {
			t.Fatalf("%s %s through %s: %v %d %s", q.method, q.path, base, err, r.status, r.body)
		}
		t.Logf("%s %s: %d", q.method, q.path, r.status)
	}
	if r, _ := c.send(base, "GET", "/internal/jwks.json", "", ""); r.status != 404 {
		t.Errorf("an internal path through %s: %d, want 404 (routed nowhere)", base, r.status)
	}
}

// --- 6. the browser flow

// browserFlow signs alice in through the Ingress in headless Chromium and
// lets the demo badge app (an OBO client, redirect URI on 127.0.0.1:9999)
// exchange the code with PKCE and read the current user.
func (c *cluster) browserFlow(t *testing.T) {
	// the route's name is the node, its certificate the script's own
	ctx := chromium(t, chromedp.Flag("host-resolver-rules", "MAP "+c.host+" "+c.nodeAddr),
		chromedp.Flag("ignore-certificate-errors", true))

	cb := startAuthCallback(t)
	badge := authApp(c.ingressURL, authBadgeID, authBadgeSecret, "pii:basic", "pii:email")
	verifier := oauth2.GenerateVerifier()
	start := time.Now()
	run(t, ctx,
		toConsent(badge.AuthCodeURL("cluster-1", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass),
		authorizeApp())
	q := cb.wait(t)
	if q.Get("state") != "cluster-1" || q.Get("code") == "" {
		t.Fatalf("callback %v", q)
	}
	tok, err := badge.Exchange(context.WithValue(context.Background(), oauth2.HTTPClient, c.hc), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.send(c.ingressURL, "GET", "/api/users/current", tok.AccessToken, "")
	if err != nil || r.status != 200 || !strings.Contains(r.body, `"username":"alice"`) || !strings.Contains(r.body, "alice@example.org") {
		t.Fatalf("GET /api/users/current with the OBO token: %v %d %s", err, r.status, r.body)
	}
	t.Logf("login, consent, code, PKCE exchange, current user: %s", time.Since(start).Round(100*time.Millisecond))
}

// --- 7. NetworkPolicy

// networkPolicy starts a pod of no release in the release's namespace and one
// in a namespace of its own, and tries from each every Service port of the
// release and the bundled PostgreSQL and Redis: each must fail (the public port
// too: publicFrom names only the controller's namespace), while the same pod
// reaches Traefik, and a pod with the release's labels reaches the internal
// port. The release's own paths (users to volunteers and registrations, the
// services to PostgreSQL and Redis, helm test) are checked again after.
func (c *cluster) networkPolicy(t *testing.T) {
	otherNS := c.ns + "-outside"
	_, _ = c.run(time.Minute, nil, "kubectl", "create", "namespace", otherNS)
	t.Cleanup(func() { _, _ = c.run(time.Minute, nil, "kubectl", "delete", "namespace", otherNS, "--wait=false") })

	type probe struct{ ns, name string }
	mk := func(ns, name string, labels map[string]string) probe {
		l, _ := json.Marshal(labels)
		pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":%s},
		  "spec":{"automountServiceAccountToken":false,"terminationGracePeriodSeconds":0,
		    "securityContext":{"runAsNonRoot":true,"runAsUser":65534,"runAsGroup":65534,"seccompProfile":{"type":"RuntimeDefault"}},
		    "containers":[{"name":"sh","image":"busybox:1.37.0","imagePullPolicy":"IfNotPresent","command":["sleep","900"],
		      "securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}`, name, l)
		if out, err := c.run(time.Minute, strings.NewReader(pod), "kubectl", "-n", ns, "create", "-f", "-"); err != nil {
			t.Fatalf("creating pod %s/%s: %v\n%s", ns, name, err, out)
		}
		t.Cleanup(func() {
			_, _ = c.run(time.Minute, nil, "kubectl", "-n", ns, "delete", "pod", name, "--grace-period=0", "--force", "--wait=false")
		})
		return probe{ns, name}
	}
	outsiders := []probe{
		mk(c.ns, "outsider", map[string]string{"app": "outsider"}),
		mk(otherNS, "outsider", map[string]string{"app": "outsider"}),
	}
	// labelled as one of the release's services (component), as the internal port's policy admits
	insider := mk(c.ns, "insider", map[string]string{"app.kubernetes.io/instance": c.release, "app.kubernetes.io/part-of": "eventreg",
		"app.kubernetes.io/component": "users"})
	for _, p := range append(outsiders, insider) {
		if out, err := c.run(2*time.Minute, nil, "kubectl", "-n", p.ns, "wait", "--for=condition=Ready", "pod/"+p.name, "--timeout=90s"); err != nil {
			t.Fatalf("pod %s/%s: %v\n%s", p.ns, p.name, err, out)
		}
	}
	// connect tries each host:port at once and prints "host:port open|closed":
	// busybox's nc exits 1 when it cannot connect (refused, or no answer within
	// -w 3 s); connected, it exits when the server closes or timeout stops it.
	connect := func(p probe, targets []string) map[string]bool {
		script := `for hp in "$@"; do (timeout 5 nc -w 3 "${hp%:*}" "${hp##*:}" </dev/null >/dev/null 2>&1; if [ $? = 1 ]; then echo "$hp closed"; else echo "$hp open"; fi) & done; wait`
		out, err := c.run(time.Minute, nil, "kubectl", append([]string{"-n", p.ns, "exec", p.name, "--", "sh", "-c", script, "sh"}, targets...)...)
		if err != nil {
			t.Fatalf("probing from %s/%s: %v\n%s", p.ns, p.name, err, out)
		}
		got := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				got[f[0]] = f[1] == "open"
			}
		}
		if len(got) != len(targets) {
			t.Fatalf("probing from %s/%s: %q", p.ns, p.name, out)
		}
		return got
	}
	fq := func(name string) string { return name + "." + c.ns + ".svc" }
	var denied []string
	for _, svc := range clusterServices {
		denied = append(denied, fq(c.name(svc))+":9090", fq(c.name(svc))+":9091", fq(c.name(svc))+":8080")
	}
	denied = append(denied, fq(c.name("postgresql"))+":5432", fq(c.name("redis"))+":6379")
	control := "traefik." + c.infraNS + ".svc:443"
	for _, p := range outsiders {
		start := time.Now()
		got := connect(p, append([]string{control}, denied...))
		if !got[control] {
			t.Fatalf("%s/%s cannot reach Traefik (%s): its network is broken, the checks below would prove nothing", p.ns, p.name, control)
		}
		for _, d := range denied {
			if got[d] {
				t.Errorf("%s/%s, outside the release, CAN connect to %s", p.ns, p.name, d)
			}
		}
		t.Logf("%s/%s: %s open; %d release ports closed (%s)", p.ns, p.name, control, len(denied), time.Since(start).Round(100*time.Millisecond))
	}
	// a pod with the labels of the release's services reaches the internal port
	// (where it would still need a service token), not the data stores (those
	// take only pods labelled as their clients)
	internal := []string{fq(c.name("auth")) + ":9090", fq(c.name("users")) + ":9090"}
	stores := []string{fq(c.name("postgresql")) + ":5432", fq(c.name("redis")) + ":6379"}
	got := connect(insider, append(append([]string{}, internal...), stores...))
	for _, h := range internal {
		if !got[h] {
			t.Errorf("%s/%s, labelled as the release's, cannot connect to %s", insider.ns, insider.name, h)
		}
	}
	for _, h := range stores {
		if got[h] {
			t.Errorf("%s/%s, not labelled as a client of the data stores, CAN connect to %s", insider.ns, insider.name, h)
		}
	}
	t.Logf("%s/%s (the release's labels): %v", insider.ns, insider.name, got)
	// the release's own paths, with the policies enforced
	c.routeChecks(t, c.ingressURL)
	c.helmTest(t)
}

// --- load through the public route

// clusterLoad runs a few workers sending requests through the Ingress until
// stopped or their time is up (a bounded loop: at most limit, paced), and
// records every failure with its time.
type clusterLoad struct {
	c        *cluster
	sent     atomic.Int64
	mu       sync.Mutex
	failures []clusterFailure
	stop     chan struct{}
	wg       sync.WaitGroup
	writes   *clusterRoleWrites
}

type clusterFailure struct {
	at   time.Time
	what string
}

type clusterRequest struct {
	method, path, body string
	want               int
	ok                 func()
	failed             func()
}

func (c *cluster) startLoad(t *testing.T, limit time.Duration, writes *clusterRoleWrites, reads []clusterRequest) *clusterLoad {
	l := &clusterLoad{c: c, stop: make(chan struct{}), writes: writes}
	deadline := time.Now().Add(limit)
	worker := func(next func(i int) clusterRequest) {
		defer l.wg.Done()
		for i := 0; time.Now().Before(deadline); i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			q := next(i)
			var r reply
			var err error
			if q.path == "/api/oauth/token" {
				r, err = c.tokenGrant(c.ingressURL)
			} else {
				r, err = c.send(c.ingressURL, q.method, q.path, c.token, q.body)
			}
			l.sent.Add(1)
			if err != nil || r.status != q.want {
				what := fmt.Sprintf("%s %s: %v", q.method, q.path, err)
				if err == nil {
					what = fmt.Sprintf("%s %s: %d %.200s", q.method, q.path, r.status, r.body)
				}
				l.mu.Lock()
				l.failures = append(l.failures, clusterFailure{time.Now(), what})
				l.mu.Unlock()
				if q.failed != nil {
					q.failed()
				}
			} else if q.ok != nil {
				q.ok()
			}
			time.Sleep(40 * time.Millisecond) // each worker at most ~25 requests a second: users takes three, under its limit of 100 a second per client
		}
	}
	for _, r := range reads {
		l.wg.Add(1)
		go worker(func(int) clusterRequest { return r })
	}
	// client-credentials token grants (auth)
	l.wg.Add(1)
	go worker(func(int) clusterRequest {
		return clusterRequest{method: "POST", path: "/api/oauth/token", want: 200}
	})
	if writes != nil {
		l.wg.Add(1)
		go worker(writes.next)
	}
	t.Cleanup(l.halt)
	return l
}

func (l *clusterLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *clusterLoad) failed() []clusterFailure {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]clusterFailure(nil), l.failures...)
}

// clusterReads: a read each of users, volunteers, registrations and users'
// forwarding, as a worker each.
func clusterReads() []clusterRequest {
	return []clusterRequest{
		{method: "GET", path: "/api/v0/users/1001", want: 200},
		{method: "GET", path: "/api/v0/volunteers/departments", want: 200},
		{method: "POST", path: "/api/v0/registration/search", body: `{"limit": 5}`, want: 200},
		{method: "GET", path: "/api/v0/users/1002/registration", want: 200},
	}
}

// clusterRoleWrites toggles the staff role (2) of a few users through the
// route, one change at a time, keeping the ledger of acknowledged changes.
// PUT and DELETE are idempotent, so a change that failed is repeated until
// acknowledged; a user whose last change failed is "uncertain" (it may have
// been committed without the answer arriving).
type clusterRoleWrites struct {
	mu        sync.Mutex
	ids       []int64
	held      map[int64]bool
	uncertain map[int64]bool
	acked     atomic.Int64
}

func (c *cluster) newRoleWrites(t *testing.T, ids ...int64) *clusterRoleWrites {
	w := &clusterRoleWrites{ids: ids, held: map[int64]bool{}, uncertain: map[int64]bool{}}
	for _, id := range ids {
		w.held[id] = c.hasRole(t, id)
	}
	return w
}

func (c *cluster) hasRole(t *testing.T, id int64) bool {
	t.Helper()
	r, err := c.send(c.ingressURL, "GET", fmt.Sprintf("/api/v0/users/%d/roles", id), c.token, "")
	if err != nil || r.status != 200 {
		t.Fatalf("roles of %d: %v %d %s", id, err, r.status, r.body)
	}
	return strings.Contains(r.body, `"id":"2"`)
}

func (w *clusterRoleWrites) next(i int) clusterRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.ids[i%len(w.ids)]
	path := fmt.Sprintf("/api/v0/users/%d/roles/2", id)
	method, body := "PUT", `{"scope": "global"}`
	if w.held[id] {
		method, body = "DELETE", ""
	}
	return clusterRequest{method: method, path: path, body: body, want: 204,
		ok: func() {
			w.mu.Lock()
			w.held[id] = method == "PUT"
			w.uncertain[id] = false
			w.mu.Unlock()
			w.acked.Add(1)
		},
		failed: func() { w.mu.Lock(); w.uncertain[id] = true; w.mu.Unlock() }}
}

// verify: every user's role is what its last acknowledged change left.
func (w *clusterRoleWrites) verify(t *testing.T, c *cluster) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range w.ids {
		if w.uncertain[id] {
			continue
		}
		if got := c.hasRole(t, id); got != w.held[id] {
			t.Errorf("user %d: staff role %v, but the last acknowledged change left it %v", id, got, w.held[id])
		}
	}
}

// --- 8. upgrade and rollback

func (c *cluster) migrateStatus(t *testing.T, svc string) string {
	return strings.TrimSpace(c.kubectl(t, "exec", "deploy/"+c.name(svc), "-c", svc, "--", svc, "migrate", "status"))
}

var schemaVersion = regexp.MustCompile(`version (\d+)`)

func (c *cluster) upgrade(t *testing.T) {
	before := c.migrateStatus(t, "volunteers")
	t.Logf("volunteers before: %s", before)
	writes := c.newRoleWrites(t, 1002, 1003, 1004, 1005)
	load := c.startLoad(t, 8*time.Minute, writes, clusterReads())

	// watch volunteers' pods: which ones are ready, running which tag
	type sample struct {
		at            time.Time
		oldReady      int
		newReady      int
		jobDone       bool
		jobCompletion time.Time
	}
	var samples []sample
	watchDone := make(chan struct{})
	stopWatch := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(time.Second):
			}
			var list struct{ Items []k8sPod }
			out, err := c.run(30*time.Second, nil, "kubectl", "-n", c.ns, "get", "pods", "-o", "json", "-l", "app.kubernetes.io/instance="+c.release+",app.kubernetes.io/component=volunteers")
			if err != nil || json.Unmarshal([]byte(out), &list) != nil {
				continue
			}
			s := sample{at: time.Now()}
			for _, p := range list.Items {
				if !p.ready() || p.Metadata.DeletionTimestamp != nil {
					continue
				}
				if strings.HasSuffix(p.Spec.Containers[0].Image, ":"+c.tag) {
					s.oldReady++
				} else if strings.HasSuffix(p.Spec.Containers[0].Image, ":"+c.nextTag) {
					s.newReady++
				}
			}
			var job struct {
				Status struct {
					CompletionTime *time.Time `json:"completionTime"`
				} `json:"status"`
			}
			if out, err := c.run(30*time.Second, nil, "kubectl", "-n", c.ns, "get", "job", c.name("volunteers")+"-migrate", "-o", "json"); err == nil && json.Unmarshal([]byte(out), &job) == nil && job.Status.CompletionTime != nil {
				// the Job of this upgrade, not the install's (which before-hook-creation deletes)
				if job.Status.CompletionTime.After(time.Now().Add(-10 * time.Minute)) {
					s.jobDone, s.jobCompletion = true, *job.Status.CompletionTime
				}
			}
			samples = append(samples, s)
		}
	}()

	time.Sleep(5 * time.Second) // load before the upgrade
	start := time.Now()
	c.helm(t, 15*time.Minute, "upgrade", c.release, c.chart, "-f", c.valuesFile, "--set", "serviceDefaults.image.tag="+c.nextTag, "--wait", "--timeout", "10m")
	took := time.Since(start)
	time.Sleep(5 * time.Second) // load after it
	load.halt()
	close(stopWatch)
	<-watchDone

	failed := load.failed()
	t.Logf("helm upgrade --wait: %s; %d requests through the Ingress during it (%d role changes acknowledged), %d failed",
		took.Round(time.Second), load.sent.Load(), writes.acked.Load(), len(failed))
	for i, f := range failed {
		if i < 20 {
			t.Errorf("failed at +%s: %s", f.at.Sub(start).Round(time.Millisecond), f.what)
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d requests failed during the upgrade, want 0", len(failed))
	}
	writes.verify(t, c)

	after := c.migrateStatus(t, "volunteers")
	if m := schemaVersion.FindStringSubmatch(after); m == nil || m[1] != c.nextSchema || strings.Contains(after, "dirty=true") {
		t.Fatalf("volunteers after the upgrade: %q, want version %s, clean", after, c.nextSchema)
	}
	t.Logf("volunteers after: %s", after)
	// the old pods were ready, and served, on the new schema
	var oldOnNew, newBeforeJob int
	for _, s := range samples {
		if s.jobDone && s.at.After(s.jobCompletion) && s.oldReady > 0 && s.newReady == 0 {
			oldOnNew++
		}
		if s.newReady > 0 && !s.jobDone {
			newBeforeJob++
		}
	}
	if oldOnNew == 0 {
		t.Errorf("no sample shows a pod of the old release ready after the migration Job had completed (%d samples)", len(samples))
	}
	if newBeforeJob > 0 {
		t.Errorf("a pod of the new release was ready before its migration had run")
	}
	t.Logf("old volunteers pods ready on the new schema, before any new pod: %d samples (1 s apart)", oldOnNew)
	for _, svc := range clusterServices {
		for _, p := range c.servicePods(t, svc) {
			if p.Metadata.DeletionTimestamp == nil && !strings.HasSuffix(p.Spec.Containers[0].Image, ":"+c.nextTag) {
				t.Errorf("%s still runs %s after the upgrade", p.Metadata.Name, p.Spec.Containers[0].Image)
			}
		}
	}
}

func (c *cluster) rollback(t *testing.T) {
	writes := c.newRoleWrites(t, 1002, 1003, 1004, 1005)
	load := c.startLoad(t, 8*time.Minute, writes, clusterReads())
	time.Sleep(5 * time.Second)
	start := time.Now()
	c.helm(t, 12*time.Minute, "rollback", c.release, "1", "--wait", "--timeout", "10m")
	took := time.Since(start)
	time.Sleep(5 * time.Second)
	load.halt()
	failed := load.failed()
	t.Logf("helm rollback --wait: %s; %d requests, %d failed", took.Round(time.Second), load.sent.Load(), len(failed))
	for i, f := range failed {
		if i < 20 {
			t.Errorf("failed at +%s: %s", f.at.Sub(start).Round(time.Millisecond), f.what)
		}
	}
	writes.verify(t, c)
	for _, svc := range clusterServices {
		for _, p := range c.servicePods(t, svc) {
			if p.Metadata.DeletionTimestamp == nil && !strings.HasSuffix(p.Spec.Containers[0].Image, ":"+c.tag) {
				t.Errorf("%s runs %s after the rollback", p.Metadata.Name, p.Spec.Containers[0].Image)
			}
		}
	}
	// no migration ran back: the older release serves on the newer schema
	status := c.migrateStatus(t, "volunteers")
	if m := schemaVersion.FindStringSubmatch(status); m == nil || m[1] != c.nextSchema {
		t.Errorf("volunteers after the rollback: %q, want still version %s", status, c.nextSchema)
	}
	t.Logf("volunteers after the rollback (older code): %s", status)
}

// --- 9. pods killed

// recoveryBound: the longest requests may fail after the kill: one of a
// service's two pods (the route stops sending to it once its endpoint goes),
// or the bundled PostgreSQL's only pod (its StatefulSet starts it again, the
// services' pools reconnect by themselves).
var recoveryBound = map[string]time.Duration{"postgresql": 90 * time.Second}

const serviceRecoveryBound = 20 * time.Second

func (c *cluster) killPods(t *testing.T) {
	writes := c.newRoleWrites(t, 1002, 1003, 1004, 1005)
	var report []string
	for _, svc := range append(append([]string{}, clusterServices...), "postgresql") {
		bound := serviceRecoveryBound
		if b, ok := recoveryBound[svc]; ok {
			bound = b
		}
		ok := t.Run(svc, func(t *testing.T) {
			load := c.startLoad(t, 3*time.Minute, writes, clusterReads())
			time.Sleep(4 * time.Second)
			ackedBefore := writes.acked.Load()
			pods := c.servicePods(t, svc)
			sort.Slice(pods, func(i, j int) bool { return pods[i].Metadata.Name < pods[j].Metadata.Name })
			victim := pods[0].Metadata.Name
			want := len(pods)
			killed := time.Now()
			c.kubectl(t, "delete", "pod", victim, "--grace-period=0", "--force")
			// until as many pods are ready as before (a StatefulSet's pod comes
			// back under its own name: wait for it to be gone first), then 8 s more
			var readyAgain time.Duration
			gone := false
			for {
				n := 0
				for _, p := range c.servicePods(t, svc) {
					if p.Metadata.Name == victim && !gone {
						continue
					}
					if p.ready() && p.Metadata.DeletionTimestamp == nil {
						n++
					}
				}
				if !gone {
					// the force-deleted object is gone at once; a new one of the same name is not ready yet
					gone = true
					continue
				}
				if n >= want {
					readyAgain = time.Since(killed)
					break
				}
				if time.Since(killed) > 3*time.Minute {
					t.Fatalf("%s: not %d ready pods 3 minutes after the kill", svc, want)
				}
				time.Sleep(500 * time.Millisecond)
			}
			time.Sleep(8 * time.Second)
			load.halt()
			halted := time.Now()
			failed := load.failed()
			var last time.Duration
			for _, f := range failed {
				if d := f.at.Sub(killed); d > last {
					last = d
				}
			}
			line := fmt.Sprintf("%s: killed %s; %d of %d requests failed, the last %s after the kill (bound %s); a new pod ready %s after",
				svc, victim, len(failed), load.sent.Load(), last.Round(time.Millisecond), bound, readyAgain.Round(100*time.Millisecond))
			report = append(report, line)
			t.Log(line)
			for i, f := range failed {
				if i < 10 {
					t.Logf("  +%s %s", f.at.Sub(killed).Round(time.Millisecond), f.what)
				}
				if f.at.Before(killed) {
					t.Errorf("a request failed before the kill: %s", f.what)
				}
			}
			if last > bound {
				t.Errorf("%s: failures until %s after the kill, bound %s", svc, last, bound)
			}
			if len(failed) > 0 && halted.Sub(killed.Add(last)) < 3*time.Second {
				t.Errorf("%s: requests still failing when the load stopped (the last failure %s before)", svc, halted.Sub(killed.Add(last)))
			}
			t.Logf("role changes acknowledged before the kill: %d", ackedBefore)
			writes.verify(t, c)
		})
		if !ok {
			break
		}
	}
	for _, l := range report {
		t.Log(l)
	}
}
