package deploytest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestHTTPRoute: off by default; on, a Gateway API v1 HTTPRoute (strictly
// decoded by render) attached to the parentRefs given, answering the
// hostnames given, with every backend a Service of the release on its
// public port.
func TestHTTPRoute(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		if r := render(t, ""); len(r.ofKind("HTTPRoute")) != 0 {
			t.Errorf("an HTTPRoute in the default render: %s", r.inventory())
		}
	})

	t.Run("on, with the values given", func(t *testing.T) {
		r := render(t, httpRouteValues)
		if len(r.ofKind("Ingress")) != 0 {
			t.Errorf("Ingress rendered although turned off: %s", r.inventory())
		}
		route := r.httpRoute(t)
		if len(route.Spec.ParentRefs) != 1 {
			t.Fatalf("parentRefs %+v", route.Spec.ParentRefs)
		}
		p := route.Spec.ParentRefs[0]
		if p.Name != "eg" || p.Namespace == nil || *p.Namespace != "envoy-gateway-system" || p.SectionName == nil || *p.SectionName != "https" {
			t.Errorf("parentRef %+v, want eg in envoy-gateway-system, section https", p)
		}
		if len(route.Spec.Hostnames) != 1 || route.Spec.Hostnames[0] != "api.events.example.com" {
			t.Errorf("hostnames %v", route.Spec.Hostnames)
		}
		if route.Annotations["example.com/owner"] != "platform" || route.Labels["app.kubernetes.io/instance"] != releaseName {
			t.Errorf("metadata: annotations %v labels %v", route.Annotations, route.Labels)
		}
		if len(route.Spec.Rules) == 0 || len(route.Spec.Rules) > 16 {
			t.Errorf("%d rules; the Gateway API allows 1 to 16", len(route.Spec.Rules))
		}
		for i, rule := range route.Spec.Rules {
			for _, b := range rule.BackendRefs {
				if (b.Kind != nil && *b.Kind != "Service") || (b.Group != nil && *b.Group != "") || b.Namespace != nil || b.Port == nil || *b.Port != 8080 {
					t.Errorf("rule %d: backendRef %+v; want a Service of the release on port 8080", i, b.BackendObjectReference)
				}
				svc := r.get(t, "Service", string(b.Name)).(*corev1.Service)
				if !hasPort(svc, "http", 8080) {
					t.Errorf("rule %d: Service %s has no port http 8080", i, svc.Name)
				}
			}
		}
	})

	t.Run("the session cookie reaches only auth's pages", func(t *testing.T) {
		for i, rule := range render(t, httpRouteValues).httpRoute(t).Spec.Rules {
			path := *rule.Matches[0].Path.Value
			removes := false
			for _, f := range rule.Filters {
				if f.RequestHeaderModifier != nil {
					for _, h := range f.RequestHeaderModifier.Remove {
						removes = removes || strings.EqualFold(h, "Cookie")
					}
				}
			}
			if want := path != "/oauth/"; removes != want {
				t.Errorf("rule %d (%s): removes Cookie %v, want %v", i, path, removes, want)
			}
		}
	})

	t.Run("no hostnames: those of the Gateway's listener", func(t *testing.T) {
		route := render(t, httpRouteValues+"  hostnames: []\n").httpRoute(t)
		if route.Spec.Hostnames != nil {
			t.Errorf("hostnames %v, want none", route.Spec.Hostnames)
		}
	})

	t.Run("bad values fail the install", func(t *testing.T) {
		for name, tc := range map[string]struct{ vals, want string }{
			"no parentRefs":            {"httpRoute: {enabled: true}\nconfig: {issuer: https://a.example}", "httpRoute.parentRefs must name the Gateway"},
			"typo in httpRoute":        {"httpRoute: {parentRef: [{name: eg}]}", "'parentRef' not allowed"},
			"typo in a parentRef":      {"httpRoute: {parentRefs: [{name: eg, namspace: x}]}", "'namspace' not allowed"},
			"parentRef without a name": {"httpRoute: {parentRefs: [{namespace: x}]}", "missing property 'name'"},
			"bad hostname":             {"httpRoute: {hostnames: [API.Example.com]}", "/httpRoute/hostnames/0"},
		} {
			t.Run(name, func(t *testing.T) { wantInstallError(t, tc.vals, tc.want) })
		}
	})
}

func hasPort(svc *corev1.Service, name string, port int32) bool {
	for _, p := range svc.Spec.Ports {
		if p.Name == name && p.Port == port {
			return true
		}
	}
	return false
}

// ownerURLs are the variables that tell users where to forward the
// sub-resources other services own (decision 0085), by owner.
var ownerURLs = map[string]string{"volunteers": "VOLUNTEERS_PUBLIC_URL", "registrations": "REGISTRATIONS_PUBLIC_URL"}

// TestUsersForwardsToTheOwnersPublicListeners: in the chart and in compose,
// users is told the public listener of each owner of a forwarded path, and
// the chart's NetworkPolicies let it reach them there, even when the public
// port is fenced to the ingress controller.
func TestUsersForwardsToTheOwnersPublicListeners(t *testing.T) {
	owners := map[string]bool{}
	for _, owner := range forwardedByUsers {
		owners[owner] = true
	}
	if len(ownerURLs) != len(owners) {
		t.Fatalf("ownerURLs %v and forwardedByUsers %v disagree", ownerURLs, forwardedByUsers)
	}
	for _, owner := range forwardedByUsers {
		if ownerURLs[owner] == "" {
			t.Fatalf("no variable tells users where %s listens", owner)
		}
	}

	sets := map[string]string{"httpRoute": httpRouteValues}
	for k, v := range valueSets {
		sets[k] = v
	}
	for name, vals := range sets {
		t.Run("chart, "+name+" values", func(t *testing.T) {
			r := render(t, vals)
			users := r.deployment(t, "users").Spec.Template.Spec.Containers[0]
			for owner, variable := range ownerURLs {
				svc := r.get(t, "Service", releaseName+"-"+owner).(*corev1.Service)
				if got, want := envValue(users, variable), "http://"+svc.Name+":8080"; got != want || !hasPort(svc, "http", 8080) {
					t.Errorf("users %s=%q, want %q (Service %s, port http 8080: %v)", variable, got, want, svc.Name, hasPort(svc, "http", 8080))
				}
				for _, other := range services {
					if other != "users" && envValue(r.deployment(t, other).Spec.Template.Spec.Containers[0], variable) != "" {
						t.Errorf("%s is given %s; only users forwards", other, variable)
					}
				}
			}
		})
	}

	t.Run("compose", func(t *testing.T) {
		p := loadCompose(t)
		users, ok := p.Services["users"]
		if !ok {
			t.Fatal("no users service in docker-compose.yaml")
		}
		for owner, variable := range ownerURLs {
			v := users.Environment[variable]
			if v == nil || *v != "http://"+owner+":8080" {
				t.Errorf("users %s=%v, want http://%s:8080", variable, v, owner)
			}
			if _, ok := p.Services[owner]; !ok {
				t.Errorf("no %s service in docker-compose.yaml", owner)
			}
		}
	})

	t.Run("NetworkPolicies", func(t *testing.T) {
		for name, vals := range map[string]string{"default": "", "production (public port fenced)": productionValues} {
			r := render(t, vals)
			var policies []*networkingv1.NetworkPolicy
			for _, o := range r.ofKind("NetworkPolicy") {
				policies = append(policies, o.obj.(*networkingv1.NetworkPolicy))
			}
			pod := func(svc string) peer {
				d := r.deployment(t, svc)
				return peer{name: d.Name, namespace: namespace, labels: d.Spec.Template.Labels}
			}
			for _, owner := range forwardedByUsers {
				if !admits(t, policies, pod(owner), pod("users"), 8080) {
					t.Errorf("%s: users cannot reach %s's public port 8080", name, owner)
				}
			}
			if vals != "" {
				// Fenced: only users is let in besides the controller, and only to the owners.
				if admits(t, policies, pod("volunteers"), pod("auth"), 8080) {
					t.Errorf("%s: auth reaches volunteers' public port; only users forwards", name)
				}
				if admits(t, policies, pod("auth"), pod("users"), 8080) {
					t.Errorf("%s: users reaches auth's public port; it forwards nothing there", name)
				}
			}
		}
	})
}
