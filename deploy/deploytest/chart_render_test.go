package deploytest

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartRel    = "charts/eventreg"
	releaseName = "eventreg"
	namespace   = "events"
)

var (
	chartOnce   sync.Once
	loadedChart *chart.Chart
	chartErr    error
)

func eventregChart(t testing.TB) *chart.Chart {
	t.Helper()
	chartOnce.Do(func() { loadedChart, chartErr = loader.Load(repoPath(t, chartRel)) })
	if chartErr != nil {
		t.Fatalf("loading %s: %v", chartRel, chartErr)
	}
	return loadedChart
}

// install renders the chart as `helm install --dry-run` does, schema validation included.
func install(t testing.TB, release string, vals map[string]any) (*release.Release, error) {
	t.Helper()
	return installChart(t, eventregChart(t), release, vals)
}

// installChart is install for a chart changed by a test.
func installChart(t testing.TB, c *chart.Chart, release string, vals map[string]any) (*release.Release, error) {
	t.Helper()
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	inst := action.NewInstall(cfg)
	inst.DryRun = true
	inst.ClientOnly = true
	inst.Replace = true
	inst.ReleaseName = release
	inst.Namespace = namespace
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}
	return inst.Run(c, withGateway(vals))
}

// Test values for what the chart requires of every install, the gateway in
// front of the services: its pods' addresses (config.trustedProxies) and,
// for the NetworkPolicies, its pods as peers (networkPolicy.publicFrom).
const (
	testTrustedProxies = "10.42.0.0/16"
	testGatewayNS      = "ingress"
)

// withGateway gives vals the gateway values the chart requires unless vals
// names them (even empty, to test that the chart asks for them).
func withGateway(vals map[string]any) map[string]any {
	if vals == nil {
		vals = map[string]any{}
	}
	section := func(name string) map[string]any {
		m, ok := vals[name].(map[string]any)
		if !ok {
			m = map[string]any{}
			vals[name] = m
		}
		return m
	}
	if cfg := section("config"); cfg["trustedProxies"] == nil {
		cfg["trustedProxies"] = testTrustedProxies
	}
	if np := section("networkPolicy"); np["publicFrom"] == nil {
		np["publicFrom"] = []any{map[string]any{"namespaceSelector": map[string]any{
			"matchLabels": map[string]any{"kubernetes.io/metadata.name": testGatewayNS}}}}
	}
	return vals
}

// rendered is one render of the chart, decoded.
type rendered struct {
	rel     *release.Release
	objects []object
}

type object struct {
	source string // template path
	hook   string // helm.sh/hook annotation, "" for a release object
	obj    runtime.Object
	name   string
	kind   string
}

var strictDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := gatewayv1.Install(scheme); err != nil {
		panic(err)
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
}()

// render installs with vals (a YAML document) and decodes every object strictly:
// an unknown or duplicated field, or a kind the API does not know, fails.
func render(t *testing.T, vals string) rendered {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(vals), &v); err != nil {
		t.Fatalf("test values: %v", err)
	}
	rel, err := install(t, releaseName, v)
	if err != nil {
		t.Fatalf("helm install --dry-run: %v", err)
	}
	r := rendered{rel: rel}
	r.objects = append(r.objects, decodeManifest(t, rel.Manifest, "")...)
	for _, h := range rel.Hooks {
		objs := decodeManifest(t, h.Manifest, "hook")
		for i := range objs {
			objs[i].source = h.Path
			objs[i].hook = strings.Join(eventsOf(h), ",")
		}
		r.objects = append(r.objects, objs...)
	}
	return r
}

func eventsOf(h *release.Hook) []string {
	var out []string
	for _, e := range h.Events {
		out = append(out, string(e))
	}
	return out
}

func decodeManifest(t *testing.T, manifest, hook string) []object {
	t.Helper()
	var out []object
	source := ""
	for _, doc := range strings.Split(manifest, "\n---") {
		for _, line := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(line, "# Source: "); ok {
				source = s
			}
		}
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, gvk, err := strictDecoder.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s: strict decoding into the Kubernetes API types: %v\n%s", source, err, doc)
		}
		name := ""
		if m, ok := obj.(interface{ GetName() string }); ok {
			name = m.GetName()
		}
		out = append(out, object{source: source, hook: hook, obj: obj, name: name, kind: gvk.Kind})
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func (r rendered) get(t *testing.T, kind, name string) runtime.Object {
	t.Helper()
	for _, o := range r.objects {
		if o.kind == kind && o.name == name {
			return o.obj
		}
	}
	t.Fatalf("no %s %q in the render; have %s", kind, name, r.inventory())
	return nil
}

func (r rendered) has(kind, name string) bool {
	for _, o := range r.objects {
		if o.kind == kind && o.name == name {
			return true
		}
	}
	return false
}

func (r rendered) ofKind(kind string) []object {
	var out []object
	for _, o := range r.objects {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (r rendered) inventory() string {
	var s []string
	for _, o := range r.objects {
		s = append(s, o.kind+"/"+o.name)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func (r rendered) deployment(t *testing.T, svc string) *appsv1.Deployment {
	return r.get(t, "Deployment", releaseName+"-"+svc).(*appsv1.Deployment)
}

func (r rendered) job(t *testing.T, name string) *batchv1.Job {
	return r.get(t, "Job", name).(*batchv1.Job)
}

func (r rendered) ingress(t *testing.T) *networkingv1.Ingress {
	return r.get(t, "Ingress", releaseName).(*networkingv1.Ingress)
}

// podTemplates are the pods the release runs, by a short name.
func (r rendered) pods(t *testing.T) map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	for _, o := range r.objects {
		switch x := o.obj.(type) {
		case *appsv1.Deployment:
			out[x.Name] = x.Spec.Template
		case *appsv1.StatefulSet:
			out[x.Name] = x.Spec.Template
		case *batchv1.Job:
			out[x.Name] = x.Spec.Template
		case *corev1.Pod:
			out[x.Name] = corev1.PodTemplateSpec{ObjectMeta: x.ObjectMeta, Spec: x.Spec}
		}
	}
	return out
}

// dump is the golden form of a render: release objects, hooks, NOTES.
func (r rendered) dump() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(r.rel.Manifest) + "\n")
	hooks := append([]*release.Hook(nil), r.rel.Hooks...)
	sort.SliceStable(hooks, func(i, j int) bool {
		if hooks[i].Path != hooks[j].Path {
			return hooks[i].Path < hooks[j].Path
		}
		return hooks[i].Name < hooks[j].Name
	})
	for _, h := range hooks {
		fmt.Fprintf(&b, "---\n# Hook: %s\n%s\n", strings.Join(eventsOf(h), ","), strings.TrimSpace(h.Manifest))
	}
	b.WriteString("---\n# NOTES.txt\n" + strings.TrimSpace(r.rel.Info.Notes) + "\n")
	return b.String()
}
