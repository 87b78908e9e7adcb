package deploytest

import (
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// hookCall is one request of the `helm test` script: fetch (an answer is
// expected) or unauthorized (a 401 is), made directly to a Service or
// through the public route.
type hookCall struct {
	verb, via string
	url       *url.URL
}

// helmTest is the rendered `helm test` Pod and what its script does.
type helmTest struct {
	pod    *corev1.Pod
	script string
	vars   map[string]string // the script's name=value lines
	calls  []hookCall
}

var (
	hookVar      = regexp.MustCompile(`(?m)^(\w+)=(\S+)$`)
	hookCallLine = regexp.MustCompile(`(?m)^(fetch|unauthorized) (direct|viaroute) "([^"]+)"`)
)

func renderHelmTest(t *testing.T, vals string) helmTest {
	t.Helper()
	pod := render(t, vals).get(t, "Pod", releaseName+"-test-api").(*corev1.Pod)
	ht := helmTest{pod: pod, script: strings.Join(pod.Spec.Containers[0].Args, "\n"), vars: map[string]string{}}
	for _, m := range hookVar.FindAllStringSubmatch(ht.script, -1) {
		ht.vars[m[1]] = strings.Trim(m[2], `'"`)
	}
	for _, m := range hookCallLine.FindAllStringSubmatch(ht.script, -1) {
		raw := regexp.MustCompile(`\$(\w+)`).ReplaceAllStringFunc(m[3], func(v string) string {
			val, ok := ht.vars[v[1:]]
			if !ok {
				t.Fatalf("helm test script uses $%s, which it does not set:\n%s", v[1:], ht.script)
			}
			return val
		})
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("helm test script calls %q: %v", raw, err)
		}
		ht.calls = append(ht.calls, hookCall{verb: m[1], via: m[2], url: u})
	}
	if len(ht.calls) == 0 {
		t.Fatalf("found no calls in the helm test script:\n%s", ht.script)
	}
	return ht
}

// made are the calls made via "direct" (to the release's Services) or via
// "viaroute" (through the public route).
func (ht helmTest) made(via string) []hookCall {
	return slices.DeleteFunc(slices.Clone(ht.calls), func(c hookCall) bool { return c.via != via })
}

// serviceOf is the service whose Service a direct call names.
func serviceOf(t *testing.T, c hookCall) string {
	t.Helper()
	svc, ok := strings.CutPrefix(c.url.Hostname(), releaseName+"-")
	if !ok || !slices.Contains(services, svc) {
		t.Fatalf("helm test calls %s, which is no Service of the release", c.url)
	}
	return svc
}

func (ht helmTest) hasCall(verb, via, rawURL string) bool {
	for _, c := range ht.calls {
		if c.verb == verb && c.via == via && c.url.String() == rawURL {
			return true
		}
	}
	return false
}

// TestChartTestHookChecksMetadataAndJWKS: directly, the server metadata names
// the issuer, both JWKS hold keys, and each resource service refuses a
// request without a token.
func TestChartTestHookChecksMetadataAndJWKS(t *testing.T) {
	ht := renderHelmTest(t, productionValues)
	for _, want := range []string{
		`'"https://api.events.example.com"'`, `'"keys"'`, `'"kid"'`, `grep -q " 401 "`,
	} {
		if !strings.Contains(ht.script, want) {
			t.Errorf("helm test script lacks %q:\n%s", want, ht.script)
		}
	}
	for _, c := range []struct{ verb, url string }{
		{"fetch", "http://eventreg-auth:8080/.well-known/oauth-authorization-server"},
		{"fetch", "http://eventreg-auth:8080/.well-known/jwks.json"},
		{"fetch", "http://eventreg-auth:9090/.well-known/jwks.json"},
		{"unauthorized", "http://eventreg-users:8080/api/v0/roles"},
		{"unauthorized", "http://eventreg-volunteers:8080/api/v0/volunteers/departments"},
		{"unauthorized", "http://eventreg-registrations:8080/api/v0/users/1/registration"},
		{"unauthorized", "http://eventreg-dealers:8080/api/v0/dealers/search"},
	} {
		if !ht.hasCall(c.verb, "direct", c.url) {
			t.Errorf("helm test does not %s %s directly:\n%s", c.verb, c.url, ht.script)
		}
	}
	if ht.pod.Labels["eventreg.io/helm-test"] != "true" {
		t.Errorf("helm test pod lacks the label eventreg.io/helm-test that the NetworkPolicies admit: %v", ht.pod.Labels)
	}
	if !pinned(ht.pod.Spec.Containers[0].Image) {
		t.Errorf("helm test image %q is not pinned", ht.pod.Spec.Containers[0].Image)
	}
}

// TestChartTestHookCallsForwardedPaths: the two paths users forwards to their
// owners (decision 0085) are called through the users Service, expecting the
// owner's 401; every direct call goes to the Service the route table sends
// its path to; and the NetworkPolicies admit each hop, the test Pod to the
// Service and users to the owner, also with the public port fenced.
func TestChartTestHookCallsForwardedPaths(t *testing.T) {
	for name, vals := range map[string]string{"default": "", "production (public port fenced)": productionValues} {
		t.Run(name, func(t *testing.T) {
			r := render(t, vals)
			ht := renderHelmTest(t, vals)
			ing := render(t, "").ingress(t)
			var policies []*networkingv1.NetworkPolicy
			for _, o := range r.ofKind("NetworkPolicy") {
				policies = append(policies, o.obj.(*networkingv1.NetworkPolicy))
			}
			testPod := peer{name: "helm test", namespace: namespace, labels: ht.pod.Labels}
			pod := func(svc string) peer {
				d := r.deployment(t, svc)
				return peer{name: d.Name, namespace: namespace, labels: d.Spec.Template.Labels}
			}

			for path, owner := range forwardedByUsers {
				want := "http://" + releaseName + "-users:8080" + pathParam.ReplaceAllString(path, "1")
				if !ht.hasCall("unauthorized", "direct", want) {
					t.Errorf("helm test does not expect a 401 from %s (users forwards it to %s):\n%s", want, owner, ht.script)
				}
				if !admits(t, policies, pod(owner), pod("users"), 8080) {
					t.Errorf("the NetworkPolicies keep users from %s's public port: the forwarded %s would fail", owner, path)
				}
			}
			for _, c := range ht.made("direct") {
				svc := serviceOf(t, c)
				port := c.url.Port()
				if port != "8080" && !(port == "9090" && svc == "auth") {
					t.Errorf("helm test calls %s: want a public port 8080 (or auth's internal JWKS)", c.url)
				}
				if port == "8080" && svc != "auth" {
					// the Service the route table sends the path to, or the owner users forwards it to
					routed, _, _, ok := matchIngressSpec(ing, c.url.Path)
					var owner string
					for path, o := range forwardedByUsers {
						if c.url.Path == pathParam.ReplaceAllString(path, "1") {
							owner = o
						}
					}
					if !ok || (routed != svc && owner != svc) {
						t.Errorf("helm test calls %s on %s, but the route table sends it to %q (and users forwards it to %q)", c.url.Path, svc, routed, owner)
					}
				}
				p := map[string]int32{"8080": 8080, "9090": 9090}[port]
				if !admits(t, policies, pod(svc), testPod, p) {
					t.Errorf("the NetworkPolicies keep the helm test Pod from %s", c.url.Host)
				}
			}
		})
	}
}

// TestChartTestHookCallsThroughThePublicRoute: where the chart renders a route
// (or tests.publicRoute.url names one), helm test calls through it the
// metadata (naming the issuer) and, expecting 401, a path of users, both
// forwarded paths and one of volunteers, so every service is reached the way
// apps reach it; it connects to the issuer's URL, or to
// tests.publicRoute.url with the route's host name as Host.
func TestChartTestHookCallsThroughThePublicRoute(t *testing.T) {
	for name, tc := range map[string]struct {
		vals, url, host string // url "": no call through the route
	}{
		"default Ingress":              {"", "https://api.example.org", ""},
		"production Ingress":           {productionValues, "https://api.events.example.com", ""},
		"laptop, through Traefik":      {laptopValues + "tests: {publicRoute: {url: https://traefik.kube-system.svc/}}", "https://traefik.kube-system.svc", "eventreg.localtest.me"},
		"HTTPRoute":                    {httpRouteValues, "https://api.events.example.com", ""},
		"HTTPRoute, through a Service": {httpRouteValues + "tests: {publicRoute: {url: http://envoy-eg.envoy-gateway-system.svc}}", "http://envoy-eg.envoy-gateway-system.svc", "api.events.example.com"},
		"no route":                     {bareValues, "", ""},
		"no route, the platform's":     {bareValues + "tests: {publicRoute: {url: https://gw.platform.svc:8443}}", "https://gw.platform.svc:8443", "api.events.example.net"},
		"turned off":                   {productionValues + "tests: {publicRoute: {enabled: false}}", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			ht := renderHelmTest(t, tc.vals)
			calls := ht.made("viaroute")
			if tc.url == "" {
				if len(calls) != 0 || strings.Contains(ht.script, "viaroute()") {
					t.Errorf("helm test calls through a route although there is none:\n%s", ht.script)
				}
				return
			}
			if got := ht.vars["route"]; got != tc.url {
				t.Errorf("helm test's route is %q, want %q", got, tc.url)
			}
			hostHeader := regexp.MustCompile(`viaroute\(\) \{[^}]*--header 'Host: ([^']+)'`).FindStringSubmatch(ht.script)
			switch {
			case tc.host == "" && hostHeader != nil:
				t.Errorf("helm test sets Host %q although it connects to the issuer's own URL", hostHeader[1])
			case tc.host != "" && (hostHeader == nil || hostHeader[1] != tc.host):
				t.Errorf("helm test's Host header %v, want %q:\n%s", hostHeader, tc.host, ht.script)
			}

			var issuer string
			if m := regexp.MustCompile(`(?m)^\s*expect /tmp/metadata-route '"([^"]+)"'$`).FindStringSubmatch(ht.script); m != nil {
				issuer = m[1]
			}
			if !ht.hasCall("fetch", "viaroute", tc.url+"/.well-known/oauth-authorization-server") || !strings.HasPrefix(issuer, "https://") {
				t.Errorf("helm test does not fetch the metadata through the route and find the issuer in it:\n%s", ht.script)
			}
			// Through the route table: who answers each path (users for the forwarded ones).
			route := render(t, httpRouteValues).httpRoute(t)
			reached := map[string]bool{}
			for _, c := range calls {
				target, _, _, ok := matchHTTPRoute(t, route, c.url.Path)
				if !ok {
					t.Errorf("helm test calls %s through the route, which routes it nowhere", c.url.Path)
					continue
				}
				reached[target] = true
				for path, owner := range forwardedByUsers {
					if c.url.Path == pathParam.ReplaceAllString(path, "1") {
						reached[owner] = c.verb == "unauthorized" // the owner's 401, through users
					}
				}
				if c.verb == "fetch" && target != "auth" {
					t.Errorf("helm test fetches %s through the route; only auth answers without a token", c.url.Path)
				}
			}
			for _, svc := range services {
				if !reached[svc] {
					t.Errorf("helm test reaches %s through the route by none of its calls (%d calls)", svc, len(calls))
				}
			}
			for path := range forwardedByUsers {
				if !ht.hasCall("unauthorized", "viaroute", tc.url+pathParam.ReplaceAllString(path, "1")) {
					t.Errorf("helm test does not call the forwarded %s through the route", path)
				}
			}
		})
	}
}

// TestChartRejectsBadPublicRouteURL: tests.publicRoute.url is an http(s) URL
// the script can quote.
func TestChartRejectsBadPublicRouteURL(t *testing.T) {
	for _, bad := range []string{"traefik.kube-system.svc", "ftp://x", "https://x/'; rm -rf /", "https://a b"} {
		wantInstallError(t, "tests: {publicRoute: {url: \""+bad+"\"}}", "/tests/publicRoute/url")
	}
}

// TestChartTestHookScriptPassesShellcheck: the script the helm test Pod runs
// (busybox sh), for each shape it takes, is clean POSIX sh to shellcheck.
func TestChartTestHookScriptPassesShellcheck(t *testing.T) {
	sc := shellcheckPath(t)
	if sc == "" {
		t.Skip("shellcheck is not installed")
	}
	for name, vals := range map[string]string{
		"without a route":        bareValues,
		"through the issuer":     productionValues,
		"through the controller": laptopValues + "tests: {publicRoute: {url: https://traefik.kube-system.svc}}",
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(sc, "--shell=sh", "--severity=style", "-")
			cmd.Stdin = strings.NewReader(renderHelmTest(t, vals).script)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("shellcheck on the helm test script: %v\n%s", err, out)
			}
		})
	}
}
