package deploytest

import (
	"regexp"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/eventreg/eventreg/libs/apispec"
)

// readEndpoints is the route table's endpoints (apispec.Routes).
func readEndpoints(*testing.T) []apispec.Endpoint { return apispec.Routes().Endpoints }

var pathParam = regexp.MustCompile(`\{[^}/]+\}`)

// samplePath fills every {param} of a contract path with a sample id.
func samplePath(p string) string { return pathParam.ReplaceAllString(p, "1001") }

// notRouted are paths the gateway must not hand to any service: the internal
// listener's paths are never routed (DESIGN.md), and unknown paths are 404s.
var notRouted = []string{"/internal/users/summaries", "/metrics", "/healthz", "/readyz", "/api/v1/users/1001", "/oauthx"}

// gatewayTarget is what an endpoint of service "gateway" may be in nginx: the
// root page is answered by nginx itself, the OpenAPI document comes from users.
func gatewayTarget(target string) bool { return target == "return 200" || target == "users" }

// forwardedByUsers are the contract's paths that another service owns under
// /api/v0/users: the gateway routes them, by prefix, with the rest of
// /api/v0/users to users, which forwards them to the owner (decision 0085).
// endpoints.json names them (forwardedBy); path → owner.
var forwardedByUsers = func() map[string]string {
	m := map[string]string{}
	for _, e := range apispec.Routes().Endpoints {
		if e.ForwardedBy != "" {
			m[e.Path] = e.Service
		}
	}
	return m
}()

// answeredBy is the service a gateway must route e to: its owner, or the
// service that forwards it to its owner.
func answeredBy(e apispec.Endpoint) string {
	if e.ForwardedBy != "" {
		return e.ForwardedBy
	}
	return e.Service
}

// TestForwardedPathsAreUsersSubResources: only users forwards, and only
// sub-resources under /api/v0/users (decision 0085); the tests that read
// forwardedByUsers have paths to check.
func TestForwardedPathsAreUsersSubResources(t *testing.T) {
	if len(forwardedByUsers) == 0 {
		t.Fatal("endpoints.json names no endpoint forwardedBy users")
	}
	for _, e := range readEndpoints(t) {
		if e.ForwardedBy != "" && (e.ForwardedBy != "users" || !strings.HasPrefix(e.Path, "/api/v0/users/") || e.Service == "users") {
			t.Errorf("%s %s: forwarded by %q to %s; users forwards only sub-resources under /api/v0/users/ to their owners", e.Method, e.Path, e.ForwardedBy, e.Service)
		}
	}
}

// matchIngressSpec applies the Ingress API's rules: Exact, then the longest
// Prefix matched element by element. Other path types match nothing here
// (TestRoutesNeedNoRegularExpressions refuses them). path is the Ingress path
// that matched.
func matchIngressSpec(ing *networkingv1.Ingress, uri string) (target, path string, exact bool, ok bool) {
	bestLen := -1
	for _, rule := range ing.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			svc := strings.TrimPrefix(p.Backend.Service.Name, releaseName+"-")
			switch *p.PathType {
			case networkingv1.PathTypeExact:
				if uri == p.Path {
					return svc, p.Path, true, true
				}
			case networkingv1.PathTypePrefix:
				if prefixMatches(p.Path, uri) && len(strings.TrimSuffix(p.Path, "/")) > bestLen {
					target, path, bestLen = svc, p.Path, len(strings.TrimSuffix(p.Path, "/"))
				}
			}
		}
	}
	return target, path, false, bestLen >= 0
}

// prefixMatches is the element-wise prefix match of both the Ingress API
// (Prefix) and the Gateway API (PathPrefix): a trailing "/" of the prefix is
// ignored, and /abc matches /abc, /abc/ and /abc/def but not /abcd.
func prefixMatches(prefix, uri string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return prefix == "" || uri == prefix || strings.HasPrefix(uri, prefix+"/")
}

// httpRouteValues turn the HTTPRoute on, the Ingress off.
const httpRouteValues = `
ingress:
  enabled: false
config:
  issuer: https://api.events.example.com
httpRoute:
  enabled: true
  parentRefs:
    - name: eg
      namespace: envoy-gateway-system
      sectionName: https
  hostnames: [api.events.example.com]
  annotations:
    example.com/owner: platform
`

func (r rendered) httpRoute(t *testing.T) *gatewayv1.HTTPRoute {
	return r.get(t, "HTTPRoute", releaseName).(*gatewayv1.HTTPRoute)
}

// matchHTTPRoute applies the Gateway API's precedence among the route's
// rules: an Exact path match, else the longest PathPrefix match. It returns
// the backend's service and the index of the rule.
func matchHTTPRoute(t *testing.T, route *gatewayv1.HTTPRoute, uri string) (target string, exact bool, rule int, ok bool) {
	t.Helper()
	bestLen, bestRule := -1, -1
	for i, r := range route.Spec.Rules {
		if len(r.BackendRefs) != 1 {
			t.Fatalf("HTTPRoute rule %d has %d backendRefs, want one service", i, len(r.BackendRefs))
		}
		for _, m := range r.Matches {
			if m.Path == nil || m.Path.Type == nil || m.Path.Value == nil {
				t.Fatalf("HTTPRoute rule %d: a match without a path type and value", i)
			}
			switch *m.Path.Type {
			case gatewayv1.PathMatchExact:
				if uri == *m.Path.Value {
					return backendOf(r), true, i, true
				}
			case gatewayv1.PathMatchPathPrefix:
				if prefixMatches(*m.Path.Value, uri) && len(strings.TrimSuffix(*m.Path.Value, "/")) > bestLen {
					bestLen, bestRule = len(strings.TrimSuffix(*m.Path.Value, "/")), i
				}
			}
		}
	}
	if bestRule < 0 {
		return "", false, -1, false
	}
	return backendOf(route.Spec.Rules[bestRule]), false, bestRule, true
}

func backendOf(r gatewayv1.HTTPRouteRule) string {
	return strings.TrimPrefix(string(r.BackendRefs[0].Name), releaseName+"-")
}

// TestRouteTableAgreesWithContract: nginx, the Ingress and the HTTPRoute send
// every endpoint of the contract, by prefix, to the service that answers it;
// internal and unknown paths nowhere; and no route is left over.
func TestRouteTableAgreesWithContract(t *testing.T) {
	endpoints := readEndpoints(t)
	nginxLocs := serverLocations(t, parseNginx(t, renderGateway(t, composeGateway)))
	ing := render(t, "").ingress(t)
	route := render(t, httpRouteValues).httpRoute(t)
	usedNginx, usedIngress, usedRule := map[string]bool{}, map[string]bool{}, map[int]bool{}

	for _, e := range endpoints {
		uri := samplePath(e.Path)
		t.Run(e.Method+" "+e.Path, func(t *testing.T) {
			n, ok := matchLocation(nginxLocs, uri)
			if !ok {
				t.Fatalf("nginx: no location matches %s", uri)
			}
			usedNginx[n.String()] = true
			spec, specPath, exact, specOK := matchIngressSpec(ing, uri)
			usedIngress[specPath] = true
			hr, hrExact, ruleIdx, hrOK := matchHTTPRoute(t, route, uri)
			usedRule[ruleIdx] = true

			if e.Service == "gateway" {
				if !gatewayTarget(n.target) {
					t.Errorf("nginx: %s goes to %q via %v; the gateway answers it or proxies it to users", uri, n.target, n)
				}
				if spec != "users" || !exact {
					t.Errorf("Ingress: %s goes to %q (exact: %v); want users through an Exact path", uri, spec, exact)
				}
				if hr != "users" || !hrExact {
					t.Errorf("HTTPRoute: %s goes to %q (exact: %v); want users through an Exact match", uri, hr, hrExact)
				}
				return
			}
			want := answeredBy(e)
			if n.target != want {
				t.Errorf("nginx: %s goes to %q via %v, want %s", uri, n.target, n, want)
			}
			if !specOK || spec != want {
				t.Errorf("Ingress: %s goes to %q, want %s", uri, spec, want)
			}
			if !hrOK || hr != want {
				t.Errorf("HTTPRoute: %s goes to %q, want %s", uri, hr, want)
			}
		})
	}

	for _, uri := range notRouted {
		if n, ok := matchLocation(nginxLocs, uri); !ok || n.target != "return 404" {
			t.Errorf("nginx routes %s to %v (%s); want the 404 fallback", uri, n, n.target)
		}
		if s, _, _, ok := matchIngressSpec(ing, uri); ok {
			t.Errorf("Ingress routes %s to %s; want no match", uri, s)
		}
		if s, _, _, ok := matchHTTPRoute(t, route, uri); ok {
			t.Errorf("HTTPRoute routes %s to %s; want no match", uri, s)
		}
	}
	for _, l := range nginxLocs {
		if !usedNginx[l.String()] && l.target != "return 404" {
			t.Errorf("nginx %v (%s) serves no endpoint of endpoints.json", l, l.target)
		}
	}
	for _, rule := range ing.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			if !usedIngress[p.Path] {
				t.Errorf("Ingress path %s (%s) serves no endpoint of endpoints.json", p.Path, p.Backend.Service.Name)
			}
		}
	}
	for i, r := range route.Spec.Rules {
		if !usedRule[i] {
			t.Errorf("HTTPRoute rule %d (%s) serves no endpoint of endpoints.json", i, backendOf(r))
		}
	}
}

// regexMeta are characters that mean something in a regular expression and
// nothing in a contract path.
const regexMeta = `^$*+?()[]{}|\`

// TestRoutesNeedNoRegularExpressions: every route of nginx, the Ingress and
// the HTTPRoute is a plain Exact or prefix match, and the chart needs no
// controller-specific annotation, so any controller or implementation routes
// the table alike (decision 0085).
func TestRoutesNeedNoRegularExpressions(t *testing.T) {
	for _, l := range serverLocations(t, parseNginx(t, renderGateway(t, composeGateway))) {
		if (l.modifier != "" && l.modifier != "=") || strings.ContainsAny(l.uri, regexMeta) {
			t.Errorf("nginx %v is not a plain prefix or exact location", l)
		}
	}

	for name, vals := range map[string]string{"default": "", "production": productionValues} {
		ing := render(t, vals).ingress(t)
		for k := range ing.Annotations {
			if strings.Contains(k, "nginx.ingress.kubernetes.io") || strings.Contains(k, "regex") {
				t.Errorf("%s Ingress: annotation %s; the routes need none", name, k)
			}
		}
		if name == "default" && (ing.Spec.IngressClassName != nil || len(ing.Annotations) != 0) {
			t.Errorf("default Ingress: class %v and annotations %v; want the cluster's default class and none", ing.Spec.IngressClassName, ing.Annotations)
		}
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if p.PathType == nil || (*p.PathType != networkingv1.PathTypeExact && *p.PathType != networkingv1.PathTypePrefix) {
					t.Errorf("%s Ingress: path %s has pathType %v; want Exact or Prefix", name, p.Path, p.PathType)
				}
				if strings.ContainsAny(p.Path, regexMeta) {
					t.Errorf("%s Ingress: path %s looks like a regular expression", name, p.Path)
				}
			}
		}
	}

	route := render(t, httpRouteValues).httpRoute(t)
	for i, r := range route.Spec.Rules {
		// RequestHeaderModifier is a core filter: every implementation supports it.
		for _, f := range r.Filters {
			if f.Type != gatewayv1.HTTPRouteFilterRequestHeaderModifier || f.RequestHeaderModifier == nil ||
				len(f.RequestHeaderModifier.Set) != 0 || len(f.RequestHeaderModifier.Add) != 0 {
				t.Errorf("HTTPRoute rule %d has a filter beyond removing request headers: %+v", i, f)
			}
		}
		for _, m := range r.Matches {
			if len(m.Headers) != 0 || len(m.QueryParams) != 0 || m.Method != nil {
				t.Errorf("HTTPRoute rule %d matches more than a path: %+v", i, m)
			}
			if m.Path == nil || m.Path.Type == nil || m.Path.Value == nil {
				t.Errorf("HTTPRoute rule %d: a match without a path", i)
				continue
			}
			if *m.Path.Type != gatewayv1.PathMatchExact && *m.Path.Type != gatewayv1.PathMatchPathPrefix {
				t.Errorf("HTTPRoute rule %d: path type %s; want PathPrefix or Exact", i, *m.Path.Type)
			}
			if strings.ContainsAny(*m.Path.Value, regexMeta) {
				t.Errorf("HTTPRoute rule %d: path %s looks like a regular expression", i, *m.Path.Value)
			}
		}
	}
}

// TestIngressAndHTTPRouteCarryOneTable: both are rendered from the chart's one
// route table: the same paths, match kinds and services, in the same order.
func TestIngressAndHTTPRouteCarryOneTable(t *testing.T) {
	var fromIngress, fromRoute []string
	for _, rule := range render(t, "").ingress(t).Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			fromIngress = append(fromIngress, p.Path+" "+string(*p.PathType)+" "+strings.TrimPrefix(p.Backend.Service.Name, releaseName+"-"))
		}
	}
	for _, r := range render(t, httpRouteValues).httpRoute(t).Spec.Rules {
		for _, m := range r.Matches {
			kind := string(*m.Path.Type)
			if kind == string(gatewayv1.PathMatchPathPrefix) {
				kind = string(networkingv1.PathTypePrefix)
			}
			fromRoute = append(fromRoute, *m.Path.Value+" "+kind+" "+backendOf(r))
		}
	}
	if strings.Join(fromIngress, "\n") != strings.Join(fromRoute, "\n") || len(fromIngress) == 0 {
		t.Errorf("the Ingress and the HTTPRoute differ:\nIngress:\n%s\nHTTPRoute:\n%s", strings.Join(fromIngress, "\n"), strings.Join(fromRoute, "\n"))
	}
}
