package deploytest

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// peer is a pod somewhere in the cluster.
type peer struct {
	name      string
	namespace string
	labels    map[string]string
}

// namespaceLabels are the labels Kubernetes puts on each namespace of the test.
func namespaceLabels(ns string) labels.Set {
	return labels.Set{"kubernetes.io/metadata.name": ns}
}

// admits evaluates the rendered NetworkPolicies as the API defines them: a pod
// no Ingress policy selects takes anything; a selected pod takes a connection
// that some rule of some selecting policy allows.
func admits(t *testing.T, policies []*networkingv1.NetworkPolicy, dst, src peer, port int32) bool {
	t.Helper()
	selected := false
	for _, np := range policies {
		if np.Namespace != "" && np.Namespace != dst.namespace {
			continue
		}
		if !matches(t, &np.Spec.PodSelector, dst.labels) {
			continue
		}
		ingress := len(np.Spec.PolicyTypes) == 0
		for _, pt := range np.Spec.PolicyTypes {
			ingress = ingress || pt == networkingv1.PolicyTypeIngress
		}
		if !ingress {
			continue
		}
		selected = true
		for _, rule := range np.Spec.Ingress {
			if portAllowed(rule.Ports, port) && fromAllowed(t, rule.From, dst.namespace, src) {
				return true
			}
		}
	}
	return !selected
}

func portAllowed(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Port == nil || p.Port.IntValue() == int(port) {
			return true
		}
	}
	return false
}

func fromAllowed(t *testing.T, from []networkingv1.NetworkPolicyPeer, policyNS string, src peer) bool {
	if len(from) == 0 {
		return true
	}
	for _, p := range from {
		switch {
		case p.IPBlock != nil:
			continue // addresses, not pods: not modelled
		case p.NamespaceSelector != nil:
			if !matches(t, p.NamespaceSelector, namespaceLabels(src.namespace)) {
				continue
			}
			if p.PodSelector == nil || matches(t, p.PodSelector, src.labels) {
				return true
			}
		case p.PodSelector != nil:
			if src.namespace == policyNS && matches(t, p.PodSelector, src.labels) {
				return true
			}
		}
	}
	return false
}

func matches(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("bad label selector %v: %v", sel, err)
	}
	return s.Matches(labels.Set(l))
}

func TestNetworkPolicies(t *testing.T) {
	check := func(t *testing.T, dst, src peer, port int32, want bool, policies []*networkingv1.NetworkPolicy) {
		t.Helper()
		if got := admits(t, policies, dst, src, port); got != want {
			verb := map[bool]string{true: "reach", false: "be kept from"}[want]
			t.Errorf("%s (%s) should %s %s:%d", src.name, src.namespace, verb, dst.name, port)
		}
	}
	policiesOf := func(r rendered) []*networkingv1.NetworkPolicy {
		var out []*networkingv1.NetworkPolicy
		for _, o := range r.ofKind("NetworkPolicy") {
			out = append(out, o.obj.(*networkingv1.NetworkPolicy))
		}
		return out
	}
	podsOf := func(t *testing.T, r rendered) map[string]peer {
		out := map[string]peer{}
		for name, tmpl := range r.pods(t) {
			out[name] = peer{name: name, namespace: namespace, labels: tmpl.Labels}
		}
		return out
	}
	intruder := peer{name: "intruder", namespace: namespace, labels: map[string]string{"app": "intruder"}}
	// An impostor with this release's labels in another namespace.
	impostor := peer{name: "impostor", namespace: "other", labels: map[string]string{
		"app.kubernetes.io/instance": releaseName, "app.kubernetes.io/part-of": "eventreg",
		"eventreg.io/postgres-client": "true", "eventreg.io/redis-client": "true"}}
	prometheus := peer{name: "prometheus", namespace: "monitoring", labels: map[string]string{"app": "prometheus"}}
	ingressController := peer{name: "controller", namespace: "traefik", labels: map[string]string{"app.kubernetes.io/name": "traefik"}}

	// opsOnlyFromPrometheus: where values name Prometheus in opsFrom, it
	// reaches dst's ops port and not the internal one, and no one else does.
	opsOnlyFromPrometheus := func(t *testing.T, dst peer, policies []*networkingv1.NetworkPolicy) {
		t.Helper()
		check(t, dst, prometheus, 9091, true, policies)
		check(t, dst, prometheus, 9090, false, policies)
		check(t, dst, intruder, 9091, false, policies)
	}

	gateway := peer{name: "gateway", namespace: testGatewayNS, labels: map[string]string{"app": "gateway"}}
	t.Run("default: internal port only from the release's services and helm test, ops port from no pod, public port only from the gateway", func(t *testing.T) {
		r := render(t, "")
		policies, pods := policiesOf(r), podsOf(t, r)
		for _, svc := range services {
			dst := pods[releaseName+"-"+svc]
			for _, peer := range services {
				check(t, dst, pods[releaseName+"-"+peer], 9090, true, policies)
				// a migration Job calls no service
				check(t, dst, pods[releaseName+"-"+peer+"-migrate"], 9090, false, policies)
			}
			check(t, dst, pods[releaseName+"-test-api"], 9090, true, policies)
			check(t, dst, intruder, 9090, false, policies)
			check(t, dst, impostor, 9090, false, policies)
			check(t, dst, prometheus, 9090, false, policies)
			for _, src := range []peer{pods[releaseName+"-users"], pods[releaseName+"-test-api"], intruder, prometheus} {
				check(t, dst, src, 9091, false, policies)
			}
			check(t, dst, gateway, 8080, true, policies)
			// Any other pod could say any X-Forwarded-For (decision 0091).
			check(t, dst, intruder, 8080, false, policies)
			check(t, dst, impostor, 8080, false, policies)
			check(t, dst, ingressController, 8080, false, policies)
			check(t, dst, pods[releaseName+"-users"], 5000, false, policies)
		}
	})

	t.Run("production: Prometheus (internalFrom, the old name of opsFrom) on the ops port only, the controller on the public one", func(t *testing.T) {
		r := render(t, productionValues)
		policies, pods := policiesOf(r), podsOf(t, r)
		for _, svc := range services {
			dst := pods[releaseName+"-"+svc]
			opsOnlyFromPrometheus(t, dst, policies)
			check(t, dst, prometheus, 8080, false, policies)
			check(t, dst, ingressController, 8080, true, policies)
			check(t, dst, intruder, 8080, false, policies)
			check(t, dst, intruder, 9090, false, policies)
		}
	})

	t.Run("opsFrom: Prometheus on the ops port, not the internal one", func(t *testing.T) {
		r := render(t, "networkPolicy:\n  opsFrom:\n    - namespaceSelector:\n        matchLabels:\n          kubernetes.io/metadata.name: monitoring\n")
		policies, pods := policiesOf(r), podsOf(t, r)
		for _, svc := range services {
			dst := pods[releaseName+"-"+svc]
			opsOnlyFromPrometheus(t, dst, policies)
		}
	})

	t.Run("publicFrom restricted: helm test's pod still reaches every public port", func(t *testing.T) {
		r := render(t, productionValues)
		policies, pods := policiesOf(r), podsOf(t, r)
		testPod := pods[releaseName+"-test-api"]
		if testPod.labels == nil {
			t.Fatalf("no helm test pod in the render: %s", r.inventory())
		}
		// the test label alone, without the release's labels, or in another namespace, opens nothing
		labelOnly := peer{name: "label-only", namespace: namespace, labels: map[string]string{"eventreg.io/helm-test": "true"}}
		elsewhere := peer{name: "test-elsewhere", namespace: "other", labels: testPod.labels}
		for _, svc := range services {
			dst := pods[releaseName+"-"+svc]
			check(t, dst, testPod, 8080, true, policies)
			check(t, dst, testPod, 9090, true, policies)
			check(t, dst, labelOnly, 8080, false, policies)
			check(t, dst, elsewhere, 8080, false, policies)
			// the release's other pods gain nothing on the public port
			check(t, dst, pods[releaseName+"-"+svc+"-migrate"], 8080, false, policies)
		}
	})

	t.Run("laptop: data stores only from the services that use them", func(t *testing.T) {
		r := render(t, laptopValues)
		policies, pods := policiesOf(r), podsOf(t, r)
		pg, redis := pods[releaseName+"-postgresql"], pods[releaseName+"-redis"]
		for _, svc := range services {
			check(t, pg, pods[releaseName+"-"+svc], 5432, true, policies)
			check(t, pg, pods[releaseName+"-"+svc+"-migrate"], 5432, true, policies)
			// users runs with redis: false in these values
			check(t, redis, pods[releaseName+"-"+svc], 6379, svc != "users", policies)
		}
		for _, src := range []peer{pods[releaseName+"-test-api"], intruder, impostor, redis} {
			check(t, pg, src, 5432, false, policies)
		}
		for _, src := range []peer{pods[releaseName+"-test-api"], intruder, impostor, pg} {
			check(t, redis, src, 6379, false, policies)
		}
	})
}

// TestChartRequiresTheGateway: the chart trusts no whole private range as
// proxies and opens the public port to no one by default; the operator names
// the gateway's pods, by address (config.trustedProxies) and as NetworkPolicy
// peers (networkPolicy.publicFrom), or the install fails saying so.
func TestChartRequiresTheGateway(t *testing.T) {
	t.Run("the shipped values trust no proxy and admit no one", func(t *testing.T) {
		vals := eventregChart(t).Values
		if tp := vals["config"].(map[string]any)["trustedProxies"]; tp != "" {
			t.Errorf("config.trustedProxies defaults to %q: any client inside those ranges could choose its address", tp)
		}
		if pf := vals["networkPolicy"].(map[string]any)["publicFrom"]; len(pf.([]any)) != 0 {
			t.Errorf("networkPolicy.publicFrom defaults to %v", pf)
		}
	})
	t.Run("without config.trustedProxies the install fails", func(t *testing.T) {
		wantInstallError(t, `config: {trustedProxies: ""}`, "config.trustedProxies is required")
	})
	t.Run("without networkPolicy.publicFrom the install fails", func(t *testing.T) {
		wantInstallError(t, `networkPolicy: {publicFrom: []}`, "networkPolicy.publicFrom is required")
	})
	t.Run("without NetworkPolicies publicFrom is not asked for", func(t *testing.T) {
		r := render(t, `networkPolicy: {enabled: false, publicFrom: []}`)
		if len(r.ofKind("NetworkPolicy")) != 0 {
			t.Fatal("NetworkPolicies rendered while disabled")
		}
	})
	t.Run("TRUSTED_PROXIES is exactly what the operator named", func(t *testing.T) {
		r := render(t, `config: {trustedProxies: "10.42.7.0/24,fd00:42::/64"}`)
		for _, c := range r.deployment(t, "auth").Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "TRUSTED_PROXIES" && e.Value != "10.42.7.0/24,fd00:42::/64" {
					t.Fatalf("TRUSTED_PROXIES %q", e.Value)
				}
			}
		}
	})
}
