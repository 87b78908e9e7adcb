package deploytest

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Realistic value sets, besides the defaults.
const (
	// A platform team: external data stores, private registry, tracing, Prometheus.
	productionValues = `
config:
  issuer: https://api.events.example.com
  conventionId: "2027"
  logLevel: warn
secrets:
  existingSecret: eventreg-prod
  keys:
    redisUrl: REDIS_URL
telemetry:
  otlpEndpoint: http://otel-collector.observability:4318
imagePullSecrets:
  - name: registry-creds
serviceDefaults:
  image:
    registry: registry.example.com/eventreg
    tag: "1.4.2"
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          app.kubernetes.io/name: eventreg
services:
  auth:
    replicas: 3
    autoscaling:
      enabled: false
    env:
      ACCESS_TOKEN_TTL: 30m
  users:
    resources:
      limits:
        cpu: "2"
        memory: 512Mi
    env:
      HTTP_WRITE_TIMEOUT: 60s
ingress:
  host: api.events.example.com
  annotations:
    cert-manager.io/cluster-issuer: letsencrypt
  tls:
    secretName: api-events-tls
networkPolicy:
  publicFrom:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: traefik
  internalFrom:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: monitoring
metrics:
  serviceMonitor:
    enabled: true
    labels:
      release: kube-prometheus-stack
`
	// A developer trying the chart on kind/minikube: bundled data stores, one replica.
	laptopValues = `
config:
  issuer: https://eventreg.localtest.me:8443
ingress:
  host: eventreg.localtest.me
serviceDefaults:
  replicas: 1
  autoscaling:
    enabled: false
  podDisruptionBudget:
    enabled: false
  resources:
    requests:
      cpu: 50m
      memory: 64Mi
services:
  users:
    redis: false
bundledPostgresql:
  enabled: true
bundledRedis:
  enabled: true
`
	// Routing by the platform's own gateway; no NetworkPolicy controller; no rate-limit Redis.
	bareValues = `
config:
  issuer: https://api.events.example.net
ingress:
  enabled: false
networkPolicy:
  enabled: false
serviceDefaults:
  redis: false
  preStopSleepSeconds: 0
services:
  auth:
    redis: true
`
)

var valueSets = map[string]string{"default": "", "production": productionValues, "laptop": laptopValues, "bare": bareValues}

func TestChartDefaultRenderGolden(t *testing.T) {
	checkGolden(t, "testdata/golden/default.yaml", render(t, "").dump())
}

func TestChartRendersStrictly(t *testing.T) {
	env := readEnvDoc(t)
	for name, vals := range valueSets {
		t.Run(name, func(t *testing.T) {
			r := render(t, vals)
			for _, svc := range services {
				d := r.deployment(t, svc)
				checkPodHardening(t, "Deployment "+d.Name, d.Spec.Template.Spec)
				checkProbes(t, d)
				checkRuntimeEnv(t, d.Name, d.Spec.Template.Spec.Containers[0])
				env.checkEnv(t, "Deployment "+d.Name, svc, envNames(d.Spec.Template.Spec.Containers[0]))
				if got := d.Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, []string{"serve"}) {
					t.Errorf("%s: args %v, want [serve]", d.Name, got)
				}
				if !r.has("Service", d.Name) || !r.has("ServiceAccount", d.Name) {
					t.Errorf("%s: Service or ServiceAccount missing", d.Name)
				}
				checkServicePorts(t, r.get(t, "Service", d.Name).(*corev1.Service))

				job := r.job(t, d.Name+"-migrate")
				if got := job.Annotations["helm.sh/hook"]; got != "pre-install,pre-upgrade" {
					t.Errorf("Job %s: helm.sh/hook %q, want pre-install,pre-upgrade", job.Name, got)
				}
				c := job.Spec.Template.Spec.Containers[0]
				if !slices.Equal(c.Args, []string{"migrate", "up"}) || c.Image != d.Spec.Template.Spec.Containers[0].Image {
					t.Errorf("Job %s: runs %s %v, want the service image with migrate up", job.Name, c.Image, c.Args)
				}
				if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "" && r.has("ServiceAccount", sa) {
					t.Errorf("Job %s: uses ServiceAccount %q, which the release creates after pre-install hooks run", job.Name, sa)
				}
				checkPodHardening(t, "Job "+job.Name, job.Spec.Template.Spec)
				env.checkEnv(t, "Job "+job.Name, svc, envNames(c))
			}
			test := r.get(t, "Pod", releaseName+"-test-api").(*corev1.Pod)
			if test.Annotations["helm.sh/hook"] != "test" {
				t.Errorf("test Pod: helm.sh/hook %q, want test", test.Annotations["helm.sh/hook"])
			}
			checkPodHardening(t, "test Pod", test.Spec)
			for _, o := range r.objects {
				if o.kind == "Secret" {
					t.Errorf("the chart renders Secret %s: secrets are referenced (existingSecret), never made", o.name)
				}
				for _, img := range imagesOf(o) {
					if !pinned(img) {
						t.Errorf("%s %s: image %q is not pinned to a version", o.kind, o.name, img)
					}
				}
			}
		})
	}
}

func TestChartValueSets(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		r := render(t, "")
		for _, svc := range services {
			name := releaseName + "-" + svc
			if r.deployment(t, svc).Spec.Replicas != nil {
				t.Errorf("%s: replicas set although the HPA owns them", name)
			}
			hpa := r.get(t, "HorizontalPodAutoscaler", name).(*autoscalingv2.HorizontalPodAutoscaler)
			if hpa.Spec.ScaleTargetRef.Name != name || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
				t.Errorf("HPA %s: targets %s, %d..%d", name, hpa.Spec.ScaleTargetRef.Name, *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
			}
			if !r.has("PodDisruptionBudget", name) || r.has("ServiceMonitor", name) {
				t.Errorf("%s: want a PodDisruptionBudget and no ServiceMonitor", name)
			}
		}
		ing := r.ingress(t)
		if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "eventreg-tls" || ing.Spec.TLS[0].Hosts[0] != ing.Spec.Rules[0].Host {
			t.Errorf("Ingress TLS: %+v", ing.Spec.TLS)
		}
		if r.has("StatefulSet", releaseName+"-postgresql") || r.has("StatefulSet", releaseName+"-redis") {
			t.Error("the bundled data stores are on by default; they are opt-in")
		}
	})

	t.Run("production", func(t *testing.T) {
		r := render(t, productionValues)
		auth := r.deployment(t, "auth")
		if auth.Spec.Replicas == nil || *auth.Spec.Replicas != 3 || r.has("HorizontalPodAutoscaler", auth.Name) {
			t.Errorf("services.auth.autoscaling.enabled=false with replicas 3: got replicas %v, HPA present %v",
				auth.Spec.Replicas, r.has("HorizontalPodAutoscaler", auth.Name))
		}
		if !r.has("HorizontalPodAutoscaler", releaseName+"-users") {
			t.Error("users lost its HPA when only auth turned autoscaling off")
		}
		users := r.deployment(t, "users").Spec.Template.Spec.Containers[0]
		if users.Resources.Limits.Memory().String() != "512Mi" || users.Resources.Requests.Cpu().String() != "100m" {
			t.Errorf("users resources: override not merged with defaults: %v", users.Resources)
		}
		if envValue(users, "HTTP_WRITE_TIMEOUT") != "60s" || envValue(auth.Spec.Template.Spec.Containers[0], "HTTP_WRITE_TIMEOUT") != "" {
			t.Error("services.users.env reached the wrong services")
		}
		for _, svc := range services {
			c := r.deployment(t, svc).Spec.Template.Spec.Containers[0]
			if c.Image != "registry.example.com/eventreg/eventreg-"+svc+":1.4.2" {
				t.Errorf("%s image %s", svc, c.Image)
			}
			if envValue(c, "OTEL_EXPORTER_OTLP_ENDPOINT") != "http://otel-collector.observability:4318" || envValue(c, "OTEL_SERVICE_NAME") != svc {
				t.Errorf("%s: OTEL_* not set from telemetry.otlpEndpoint", svc)
			}
			if envValue(c, "AUTH_ISSUER") != "https://api.events.example.com" {
				t.Errorf("%s: AUTH_ISSUER %q", svc, envValue(c, "AUTH_ISSUER"))
			}
			if ref := secretRef(c, "DATABASE_URL"); ref != "eventreg-prod/"+svc+"-database-url" {
				t.Errorf("%s: DATABASE_URL from %q", svc, ref)
			}
			if ref := secretRef(c, "REDIS_URL"); ref != "eventreg-prod/REDIS_URL" {
				t.Errorf("%s: REDIS_URL from %q, want the renamed key", svc, ref)
			}
			if !r.has("ServiceMonitor", releaseName+"-"+svc) {
				t.Errorf("%s: no ServiceMonitor", svc)
			}
		}
		if envValue(auth.Spec.Template.Spec.Containers[0], "ACCESS_TOKEN_TTL") != "30m" {
			t.Errorf("services.auth.env ACCESS_TOKEN_TTL did not override config.accessTokenTTL")
		}
		if strings.Count(renderedEnv(auth.Spec.Template.Spec.Containers[0]), "ACCESS_TOKEN_TTL") != 1 {
			t.Error("ACCESS_TOKEN_TTL set twice")
		}
	})

	t.Run("laptop", func(t *testing.T) {
		r := render(t, laptopValues)
		pg := r.get(t, "StatefulSet", releaseName+"-postgresql").(*appsv1.StatefulSet)
		rd := r.get(t, "StatefulSet", releaseName+"-redis").(*appsv1.StatefulSet)
		for _, o := range r.objects {
			if o.kind == "StatefulSet" || (o.kind == "Service" && (strings.HasSuffix(o.name, "-postgresql") || strings.HasSuffix(o.name, "-redis"))) {
				if o.hook != "pre-install" {
					t.Errorf("%s %s: hook %q; the bundled stores must exist before the pre-install migrations", o.kind, o.name, o.hook)
				}
			}
		}
		migrationWeight, _ := strconv.Atoi(r.job(t, releaseName+"-auth-migrate").Annotations["helm.sh/hook-weight"])
		for _, sts := range []*appsv1.StatefulSet{pg, rd} {
			if w, err := strconv.Atoi(sts.Annotations["helm.sh/hook-weight"]); err != nil || w >= migrationWeight {
				t.Errorf("%s: hook weight %q is not below the migrations' %d", sts.Name, sts.Annotations["helm.sh/hook-weight"], migrationWeight)
			}
		}
		checkPodHardening(t, "bundled PostgreSQL", pg.Spec.Template.Spec)
		checkPodHardening(t, "bundled Redis", rd.Spec.Template.Spec)
		args := strings.Join(rd.Spec.Template.Spec.Containers[0].Args, " ")
		for _, want := range []string{"--appendonly yes", "--maxmemory-policy noeviction", "--maxmemory 200mb"} {
			if !strings.Contains(args, want) {
				t.Errorf("bundled Redis args %q lack %q", args, want)
			}
		}
		initSQL := r.get(t, "ConfigMap", releaseName+"-postgresql-init").(*corev1.ConfigMap).Data["10-databases.sql"]
		for _, svc := range services {
			c := r.deployment(t, svc).Spec.Template.Spec.Containers[0]
			if r.deployment(t, svc).Spec.Replicas == nil || *r.deployment(t, svc).Spec.Replicas != 1 {
				t.Errorf("%s: want 1 replica", svc)
			}
			want := "postgres://postgres:$(EVENTREG_POSTGRES_PASSWORD)@eventreg-postgresql:5432/" + svc + "?sslmode=disable"
			if envValue(c, "DATABASE_URL") != want || envIndex(c, "EVENTREG_POSTGRES_PASSWORD") > envIndex(c, "DATABASE_URL") {
				t.Errorf("%s: DATABASE_URL %q; want %q after EVENTREG_POSTGRES_PASSWORD", svc, envValue(c, "DATABASE_URL"), want)
			}
			if !strings.Contains(initSQL, "CREATE DATABASE "+svc+";") {
				t.Errorf("bundled PostgreSQL does not create database %s", svc)
			}
			if redis := envValue(c, "REDIS_URL"); (svc == "users") != (redis == "") {
				t.Errorf("%s: REDIS_URL %q (users has redis: false)", svc, redis)
			}
			if r.has("PodDisruptionBudget", releaseName+"-"+svc) || r.has("HorizontalPodAutoscaler", releaseName+"-"+svc) {
				t.Errorf("%s: PDB/HPA rendered although turned off", svc)
			}
		}
	})

	t.Run("bare", func(t *testing.T) {
		r := render(t, bareValues)
		if len(r.ofKind("Ingress")) != 0 || len(r.ofKind("NetworkPolicy")) != 0 {
			t.Errorf("Ingress/NetworkPolicy rendered although turned off: %s", r.inventory())
		}
		for _, svc := range services {
			c := r.deployment(t, svc).Spec.Template.Spec.Containers[0]
			if (svc == "auth") != (secretRef(c, "REDIS_URL") != "") {
				t.Errorf("%s: REDIS_URL from %q", svc, secretRef(c, "REDIS_URL"))
			}
			if c.Lifecycle != nil {
				t.Errorf("%s: preStop hook with preStopSleepSeconds 0", svc)
			}
		}
		if !strings.Contains(r.rel.Info.Notes, "port-forward svc/eventreg-auth") {
			t.Errorf("NOTES without an Ingress should say how to port-forward:\n%s", r.rel.Info.Notes)
		}
	})
}

func TestChartRejectsBadValues(t *testing.T) {
	for name, tc := range map[string]struct{ vals, want string }{
		"unknown top-level key":    {"ingres: {enabled: false}", "'ingres' not allowed"},
		"typo in a service":        {"services: {auth: {replica: 3}}", "'replica' not allowed"},
		"typo in shared defaults":  {"serviceDefaults: {resources: {limit: {cpu: 1}}}", "'limit' not allowed"},
		"unknown service":          {"services: {payments: {}}", "'payments' not allowed"},
		"typo in secrets":          {"secrets: {existingSecrets: x}", "'existingSecrets' not allowed"},
		"bad log level":            {"config: {logLevel: verbose}", "/config/logLevel"},
		"bad duration":             {"config: {accessTokenTTL: 1 hour}", "/config/accessTokenTTL"},
		"string where a number is": {"serviceDefaults: {replicas: two}", "/serviceDefaults/replicas"},
		"unpinned bundled image":   {"bundledRedis: {image: redis}", "/bundledRedis/image"},
		"auth without redis":       {"services: {auth: {redis: false}}", "services.auth.redis must be true"},
		"no memory limit":          {"serviceDefaults: {resources: {limits: {memory: null}}}", "resources.limits.memory is required"},
	} {
		t.Run(name, func(t *testing.T) { wantInstallError(t, tc.vals, tc.want) })
	}
}

// wantInstallError installs the chart with vals (YAML) and wants an error naming want.
func wantInstallError(t *testing.T, vals, want string) {
	t.Helper()
	var v map[string]any
	if err := yamlUnmarshal(vals, &v); err != nil {
		t.Fatal(err)
	}
	_, err := install(t, releaseName, v)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("helm install with %s: error %v, want one naming %q", vals, err, want)
	}
}

func TestChartNotes(t *testing.T) {
	notes := render(t, "").rel.Info.Notes
	for _, want := range []string{
		`kubectl -n events exec deploy/eventreg-auth -- auth clients create --name N --kind service --scopes "user:read" -o json`,
		"https://api.example.org/.well-known/oauth-authorization-server",
		"helm -n events test eventreg",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
}

func TestChartNeverInventsSecrets(t *testing.T) {
	for _, tmpl := range eventregChart(t).Templates {
		for _, fn := range []string{"randAlphaNum", "randAlpha", "randAscii", "randBytes", "genPrivateKey", "genCA", "genSelfSignedCert", "lookup"} {
			if regexp.MustCompile(`\b` + fn + `\b`).Match(tmpl.Data) {
				t.Errorf("%s uses %s: the chart must not make up secrets (they would change on upgrade)", tmpl.Name, fn)
			}
		}
	}
}

func TestChartLint(t *testing.T) {
	kube := &chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}
	for name, vals := range valueSets {
		t.Run(name, func(t *testing.T) {
			var v map[string]any
			if err := yamlUnmarshal(vals, &v); err != nil {
				t.Fatal(err)
			}
			res := lint.AllWithKubeVersion(repoPath(t, chartRel), withGateway(v), namespace, kube)
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}

// TestSchemaCoversValues keeps values.yaml and values.schema.json in step: every
// top-level key of one is in the other.
func TestSchemaCoversValues(t *testing.T) {
	c := eventregChart(t)
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	if err := yamlUnmarshal(string(c.Schema), &schema); err != nil {
		t.Fatal(err)
	}
	for k := range c.Values {
		if _, ok := schema.Properties[k]; !ok {
			t.Errorf("values.yaml key %s is not in values.schema.json", k)
		}
	}
	for k := range schema.Properties {
		if _, ok := c.Values[k]; !ok && k != "global" {
			t.Errorf("values.schema.json key %s has no default in values.yaml", k)
		}
	}
}

// --- assertions shared by the value sets ---

func checkPodHardening(t *testing.T, what string, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v: want runAsNonRoot and RuntimeDefault seccomp", what, psc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service account token it never uses", what)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s/%s: no securityContext", what, c.Name)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s/%s: allowPrivilegeEscalation is not false", what, c.Name)
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s/%s: root filesystem is writable", what, c.Name)
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
			t.Errorf("%s/%s: capabilities %+v, want drop [ALL]", what, c.Name, sc.Capabilities)
		case sc.Privileged != nil && *sc.Privileged:
			t.Errorf("%s/%s: privileged", what, c.Name)
		}
		if c.Resources.Limits.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero() {
			t.Errorf("%s/%s: no cpu/memory limits", what, c.Name)
		}
	}
}

func checkProbes(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", d.Name, p.name)
			continue
		}
		// the ops port: the internal one needs a service token (decision 0094)
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "ops" {
			t.Errorf("%s: %s probe on %s port %s, want %s on the ops port", d.Name, p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 8080 || ports["internal"] != 9090 || ports["ops"] != 9091 || len(ports) != 3 {
		t.Errorf("%s: container ports %v, want http 8080, internal 9090 and ops 9091", d.Name, ports)
	}
	if envValue(c, "OPS_ADDR") != ":9091" || envIndex(c, "INTERNAL_AUTH_KEY") < 0 || c.Env[envIndex(c, "INTERNAL_AUTH_KEY")].ValueFrom == nil {
		t.Errorf("%s: OPS_ADDR %q, INTERNAL_AUTH_KEY not from the Secret", d.Name, envValue(c, "OPS_ADDR"))
	}
}

// checkRuntimeEnv: GOMEMLIMIT is 90% of the memory limit, in bytes; GOMAXPROCS
// is left to Go, whose default follows the container's CPU limit.
func checkRuntimeEnv(t *testing.T, name string, c corev1.Container) {
	t.Helper()
	limit := c.Resources.Limits.Memory().Value()
	if got, want := envValue(c, "GOMEMLIMIT"), strconv.FormatInt(limit*9/10, 10); got != want {
		t.Errorf("%s: GOMEMLIMIT %q, want %s (90%% of the memory limit %d)", name, got, want, limit)
	}
	if envIndex(c, "GOMAXPROCS") >= 0 {
		t.Errorf("%s: sets GOMAXPROCS; Go's default follows the CPU limit", name)
	}
	seen := map[string]bool{}
	for _, e := range c.Env {
		if seen[e.Name] {
			t.Errorf("%s: %s is set twice", name, e.Name)
		}
		seen[e.Name] = true
	}
}

func checkServicePorts(t *testing.T, s *corev1.Service) {
	t.Helper()
	got := map[string]string{}
	for _, p := range s.Spec.Ports {
		got[p.Name] = p.TargetPort.String()
		if (p.Name == "http" && p.Port != 8080) || (p.Name == "internal" && p.Port != 9090) || (p.Name == "ops" && p.Port != 9091) {
			t.Errorf("Service %s: port %s is %d", s.Name, p.Name, p.Port)
		}
	}
	if got["http"] != "http" || got["internal"] != "internal" || got["ops"] != "ops" || len(got) != 3 {
		t.Errorf("Service %s: ports %v, want http, internal and ops", s.Name, got)
	}
}

func envNames(c corev1.Container) map[string]bool {
	out := map[string]bool{}
	for _, e := range c.Env {
		out[e.Name] = true
	}
	return out
}

func envValue(c corev1.Container, name string) string {
	v := ""
	for _, e := range c.Env {
		if e.Name == name {
			v = e.Value // the last one wins, as in Kubernetes
		}
	}
	return v
}

func envIndex(c corev1.Container, name string) int {
	return slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
}

func renderedEnv(c corev1.Container) string {
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	return strings.Join(names, " ")
}

func secretRef(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return ""
}

func imagesOf(o object) []string {
	var spec *corev1.PodSpec
	switch x := o.obj.(type) {
	case *appsv1.Deployment:
		spec = &x.Spec.Template.Spec
	case *appsv1.StatefulSet:
		spec = &x.Spec.Template.Spec
	case *batchv1.Job:
		spec = &x.Spec.Template.Spec
	case *corev1.Pod:
		spec = &x.Spec
	default:
		return nil
	}
	var out []string
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		out = append(out, c.Image)
	}
	return out
}

var versionTag = regexp.MustCompile(`:[A-Za-z0-9_.-]*[0-9][A-Za-z0-9_.-]*$|@sha256:[0-9a-f]{64}$`)

// pinned: a tag carrying a version number, or a digest; never latest.
func pinned(image string) bool {
	return versionTag.MatchString(image) && !strings.HasSuffix(image, ":latest")
}

func yamlUnmarshal(s string, v any) error {
	return yaml.Unmarshal([]byte(s), v)
}
