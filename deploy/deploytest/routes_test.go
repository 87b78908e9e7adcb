package deploytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

type endpoint struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	Service string `json:"service"`
}

func readEndpoints(t *testing.T) []endpoint {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedSpecDir(t), "endpoints.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Endpoints []endpoint `json:"endpoints"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("endpoints.json: %v", err)
	}
	if len(doc.Endpoints) == 0 {
		t.Fatal("endpoints.json lists no endpoints")
	}
	return doc.Endpoints
}

var pathParam = regexp.MustCompile(`\{[^}/]+\}`)

// samplePath fills every {param} of a contract path with a sample id.
func samplePath(p string) string { return pathParam.ReplaceAllString(p, "1001") }

// notRouted are paths the gateway must not hand to any service: the internal
// listener's paths are never routed (DESIGN.md), and unknown paths are 404s.
var notRouted = []string{"/internal/users/summaries", "/metrics", "/healthz", "/readyz", "/api/v1/users/1001", "/oauthx"}

// gatewayTarget is what an endpoint of service "gateway" may be in nginx: the
// root page is answered by nginx itself, the OpenAPI document comes from users.
func gatewayTarget(target string) bool { return target == "return 200" || target == "users" }

// ingressNginxLocations turns Ingress paths into the locations ingress-nginx
// writes when use-regex is on for the host: every path, Exact ones included,
// becomes a case-insensitive regex `~* "^path"`, ordered by path length, longest
// first (ingress-nginx's buildLocation and its location sort).
func ingressNginxLocations(t *testing.T, ing *networkingv1.Ingress) []location {
	t.Helper()
	var locs []location
	for _, rule := range ing.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			target := strings.TrimPrefix(p.Backend.Service.Name, releaseName+"-")
			locs = append(locs, newLocation(t, "~*", "^"+p.Path, target))
		}
	}
	sort.SliceStable(locs, func(i, j int) bool { return len(locs[i].uri) > len(locs[j].uri) })
	return locs
}

// matchIngressSpec applies the Ingress API's own rules to the portable path
// types: Exact, then the longest Prefix matched element by element.
// ImplementationSpecific paths are left to the controller and skipped.
func matchIngressSpec(ing *networkingv1.Ingress, uri string) (target string, exact bool, ok bool) {
	best, bestLen := "", -1
	for _, rule := range ing.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			target := strings.TrimPrefix(p.Backend.Service.Name, releaseName+"-")
			switch *p.PathType {
			case networkingv1.PathTypeExact:
				if uri == p.Path {
					return target, true, true
				}
			case networkingv1.PathTypePrefix:
				prefix := strings.TrimSuffix(p.Path, "/")
				if uri == prefix || strings.HasPrefix(uri, prefix+"/") || prefix == "" {
					if len(prefix) > bestLen {
						best, bestLen = target, len(prefix)
					}
				}
			}
		}
	}
	return best, false, bestLen >= 0
}

func TestRouteTableAgreesWithContract(t *testing.T) {
	endpoints := readEndpoints(t)
	nginxLocs := serverLocations(t, parseNginx(t, renderGateway(t, composeGateway)))
	ing := render(t, "").ingress(t)
	ingressLocs := ingressNginxLocations(t, ing)

	if ing.Annotations["nginx.ingress.kubernetes.io/use-regex"] != "true" {
		t.Error("the default Ingress lacks nginx.ingress.kubernetes.io/use-regex: its sub-resource paths are regexes")
	}
	usedNginx, usedIngress := map[string]bool{}, map[string]bool{}

	for _, e := range endpoints {
		uri := samplePath(e.Path)
		t.Run(e.Method+" "+e.Path, func(t *testing.T) {
			n, ok := matchLocation(nginxLocs, uri)
			if !ok {
				t.Fatalf("nginx: no location matches %s", uri)
			}
			usedNginx[n.String()] = true
			i, ok := matchLocation(ingressLocs, uri)
			if !ok {
				t.Fatalf("Ingress: no path matches %s", uri)
			}
			usedIngress[i.uri] = true

			spec, exact, specOK := matchIngressSpec(ing, uri)
			if e.Service == "gateway" {
				if !gatewayTarget(n.target) {
					t.Errorf("nginx: %s goes to %q via %v; the gateway answers it or proxies it to users", uri, n.target, n)
				}
				if i.target != "users" || spec != "users" || !exact {
					t.Errorf("Ingress: %s goes to %q (ingress-nginx) and %q (exact: %v); want users through an Exact path", uri, i.target, spec, exact)
				}
				return
			}
			if n.target != e.Service {
				t.Errorf("nginx: %s goes to %q via %v, want %s", uri, n.target, n, e.Service)
			}
			if i.target != e.Service {
				t.Errorf("Ingress (ingress-nginx): %s goes to %q via %v, want %s", uri, i.target, i, e.Service)
			}
			// Controllers other than ingress-nginx: the portable paths alone must
			// route everything but the two regex sub-resources right.
			if !subResource(uri) && (!specOK || spec != e.Service) {
				t.Errorf("Ingress (API rules): %s goes to %q, want %s", uri, spec, e.Service)
			}
		})
	}

	for _, uri := range notRouted {
		if n, ok := matchLocation(nginxLocs, uri); !ok || n.target != "return 404" {
			t.Errorf("nginx routes %s to %v (%s); want the 404 fallback", uri, n, n.target)
		}
		if s, _, ok := matchIngressSpec(ing, uri); ok {
			t.Errorf("Ingress (API rules) routes %s to %s; want no match", uri, s)
		}
		// Under use-regex the Exact "/" is the regex ^/, so ingress-nginx hands
		// unknown paths to users' public listener, which serves no internal path.
		if i, ok := matchLocation(ingressLocs, uri); ok && i.uri != "^/" {
			t.Errorf("Ingress (ingress-nginx) routes %s to %s via %v; want nothing but the root's catch-all", uri, i.target, i)
		}
	}
	for _, l := range nginxLocs {
		if !usedNginx[l.String()] && l.target != "return 404" {
			t.Errorf("nginx %v (%s) serves no endpoint of endpoints.json", l, l.target)
		}
	}
	for _, l := range ingressLocs {
		if !usedIngress[l.uri] {
			t.Errorf("Ingress path %v (%s) serves no endpoint of endpoints.json", l, l.target)
		}
	}
}

var subResourcePath = regexp.MustCompile(`^/api/v0/users/[^/]+/(volunteer|registration)$`)

func subResource(uri string) bool { return subResourcePath.MatchString(uri) }
