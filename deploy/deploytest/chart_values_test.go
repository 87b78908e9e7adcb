package deploytest

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// podsOfService are the Deployment's and the migration Job's pod templates of a service.
func podsOfService(t *testing.T, r rendered, svc string) map[string]corev1.PodTemplateSpec {
	t.Helper()
	return map[string]corev1.PodTemplateSpec{
		"Deployment " + releaseName + "-" + svc:       r.deployment(t, svc).Spec.Template,
		"Job " + releaseName + "-" + svc + "-migrate": r.job(t, releaseName+"-"+svc+"-migrate").Spec.Template,
	}
}

// TestChartRendersNumbersAsWritten: YAML numbers reach templates as float64,
// which toString and {{ }} print as 2.097152e+06; every value that flows into
// a manifest must come out as written.
func TestChartRendersNumbersAsWritten(t *testing.T) {
	r := render(t, `
serviceDefaults:
  env:
    MAX_BODY_BYTES: 2097152
    MILLION: 1000000
    TEN_BILLION: 10000000000
    RATIO: 0.25
  extraEnv:
    - name: EXTRA_BYTES
      value: 2097152
    - name: EXTRA_BIG
      value: 10000000000
  podAnnotations:
    example.com/bytes: 2097152
    example.com/million: 1000000
  podLabels:
    example.com/shard: 10000000000
  serviceAccount:
    annotations:
      example.com/quota: 1000000
  resources:
    requests:
      memory: 2097152
      ephemeral-storage: 1000000
    limits:
      memory: 10000000000
  terminationGracePeriodSeconds: 1000000
  autoscaling:
    maxReplicas: 1000000
migrations:
  activeDeadlineSeconds: 10000000000
`)
	wantEnv := map[string]string{
		"MAX_BODY_BYTES": "2097152", "MILLION": "1000000", "TEN_BILLION": "10000000000", "RATIO": "0.25",
		"EXTRA_BYTES": "2097152", "EXTRA_BIG": "10000000000", "GOMEMLIMIT": "9000000000",
	}
	for _, svc := range services {
		for what, pod := range podsOfService(t, r, svc) {
			c := pod.Spec.Containers[0]
			for name, want := range wantEnv {
				if got := envValue(c, name); got != want {
					t.Errorf("%s: %s=%q, want %q", what, name, got, want)
				}
			}
			if got := pod.Annotations["example.com/bytes"] + " " + pod.Annotations["example.com/million"]; got != "2097152 1000000" {
				t.Errorf("%s: annotations %q, want 2097152 1000000", what, got)
			}
			if got := pod.Labels["example.com/shard"]; got != "10000000000" {
				t.Errorf("%s: label %q, want 10000000000", what, got)
			}
			if got := c.Resources.Limits.Memory().Value(); got != 10000000000 {
				t.Errorf("%s: memory limit %d, want 10000000000", what, got)
			}
			if got := c.Resources.Requests.Memory().Value(); got != 2097152 {
				t.Errorf("%s: memory request %d, want 2097152", what, got)
			}
			if got := c.Resources.Requests.StorageEphemeral().Value(); got != 1000000 {
				t.Errorf("%s: ephemeral-storage request %d, want 1000000", what, got)
			}
		}
		if got := r.get(t, "ServiceAccount", releaseName+"-"+svc).(*corev1.ServiceAccount).Annotations["example.com/quota"]; got != "1000000" {
			t.Errorf("ServiceAccount %s: annotation %q, want 1000000", svc, got)
		}
		if got := *r.deployment(t, svc).Spec.Template.Spec.TerminationGracePeriodSeconds; got != 1000000 {
			t.Errorf("%s: terminationGracePeriodSeconds %d", svc, got)
		}
		if got := *r.job(t, releaseName+"-"+svc+"-migrate").Spec.ActiveDeadlineSeconds; got != 10000000000 {
			t.Errorf("%s: activeDeadlineSeconds %d", svc, got)
		}
	}
	manifest := r.dump()
	for _, exp := range []string{"e+06", "e+09", "e+10"} {
		if strings.Contains(manifest, exp) {
			i := strings.Index(manifest, exp)
			t.Errorf("the render prints a number with an exponent (%s): ...%s...", exp, manifest[max(0, i-80):i+10])
		}
	}

	t.Run("bundled stores' sizes", func(t *testing.T) {
		r := render(t, `
config: {issuer: https://eventreg.localtest.me}
bundledPostgresql: {enabled: true, storageSize: 10000000000}
bundledRedis: {enabled: true, storageSize: 2097152}
`)
		for name, want := range map[string]int64{releaseName + "-postgresql": 10000000000, releaseName + "-redis": 2097152} {
			sts := r.get(t, "StatefulSet", name).(*appsv1.StatefulSet)
			if len(sts.Spec.VolumeClaimTemplates) == 0 {
				t.Errorf("%s: no volume claim", name)
			}
			for _, pvc := range sts.Spec.VolumeClaimTemplates {
				if v := pvc.Spec.Resources.Requests.Storage().Value(); v != want {
					t.Errorf("%s: storage %d, want %d", name, v, want)
				}
			}
		}
	})
}

// TestChartGoMemLimit: GOMEMLIMIT is 90% of the memory limit in bytes, whatever
// unit the limit is written in; GOMAXPROCS is not set.
func TestChartGoMemLimit(t *testing.T) {
	for _, limit := range []string{"256Mi", "1Gi", "512M", "1.5Gi", "2G", "2097152"} {
		t.Run(limit, func(t *testing.T) {
			r := render(t, "serviceDefaults: {resources: {limits: {memory: "+strconv.Quote(limit)+"}}}")
			q := resource.MustParse(limit)
			want := strconv.FormatInt(q.Value()*9/10, 10)
			for _, svc := range services {
				for what, pod := range podsOfService(t, r, svc) {
					c := pod.Spec.Containers[0]
					if got := envValue(c, "GOMEMLIMIT"); got != want {
						t.Errorf("%s: GOMEMLIMIT %q, want %s for a %s limit", what, got, want, limit)
					}
					if envIndex(c, "GOMAXPROCS") >= 0 {
						t.Errorf("%s: GOMAXPROCS is set", what)
					}
				}
			}
		})
	}
	t.Run("a number of bytes", func(t *testing.T) {
		c := render(t, "services: {auth: {resources: {limits: {memory: 1073741824}}}}").deployment(t, "auth").Spec.Template.Spec.Containers[0]
		if got := envValue(c, "GOMEMLIMIT"); got != "966367641" {
			t.Errorf("GOMEMLIMIT %q, want 966367641", got)
		}
	})
	t.Run("env overrides it", func(t *testing.T) {
		c := render(t, "services: {auth: {env: {GOMEMLIMIT: 100MiB}}}").deployment(t, "auth").Spec.Template.Spec.Containers[0]
		if got := envValue(c, "GOMEMLIMIT"); got != "100MiB" || strings.Count(renderedEnv(c), "GOMEMLIMIT") != 1 {
			t.Errorf("GOMEMLIMIT %q in %s, want one, 100MiB", got, renderedEnv(c))
		}
	})
	for _, bad := range []string{"512m", "1e9", "lots"} {
		t.Run("rejects "+bad, func(t *testing.T) {
			_, err := install(t, releaseName, map[string]any{"serviceDefaults": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": bad}}}})
			if err == nil || !strings.Contains(err.Error(), "resources.limits.memory") {
				t.Errorf("memory limit %q: error %v, want one naming resources.limits.memory", bad, err)
			}
		})
	}
}

// dbCAValues mount a database CA from a Secret for a DSN with
// sslmode=verify-full, as docs/deployment.md describes.
const dbCAValues = `
secrets:
  existingSecret: eventreg-prod
serviceDefaults:
  extraVolumes:
    - name: db-ca
      secret:
        secretName: eventreg-db-ca
        items:
          - key: ca.crt
            path: ca.crt
  extraVolumeMounts:
    - name: db-ca
      mountPath: /etc/eventreg/db-ca
      readOnly: true
`

// The DSN stored in the Secret (docs/deployment.md's command); the chart only refers to it.
const verifyFullDSN = "postgres://auth:PASSWORD@pg.example.internal:5432/auth?sslmode=verify-full&sslrootcert=/etc/eventreg/db-ca/ca.crt"

func TestChartDatabaseCA(t *testing.T) {
	if !strings.Contains(readRepoFile(t, "docs/deployment.md"), "sslmode=verify-full&sslrootcert=/etc/eventreg/db-ca/ca.crt") {
		t.Error("docs/deployment.md does not show the verify-full DSN this test mounts the CA for")
	}
	i := strings.Index(verifyFullDSN, "sslrootcert=")
	caFile := verifyFullDSN[i+len("sslrootcert="):]
	r := render(t, dbCAValues)
	for _, svc := range services {
		for what, pod := range podsOfService(t, r, svc) {
			c := pod.Spec.Containers[0]
			if ref := secretRef(c, "DATABASE_URL"); ref != "eventreg-prod/"+svc+"-database-url" {
				t.Errorf("%s: DATABASE_URL from %q, want the DSN in eventreg-prod", what, ref)
			}
			var mount *corev1.VolumeMount
			for i, m := range c.VolumeMounts {
				if strings.HasPrefix(caFile, strings.TrimSuffix(m.MountPath, "/")+"/") {
					mount = &c.VolumeMounts[i]
				}
			}
			if mount == nil || !mount.ReadOnly {
				t.Errorf("%s: no read-only mount holds %s: %+v", what, caFile, c.VolumeMounts)
				continue
			}
			var vol *corev1.Volume
			for i, v := range pod.Spec.Volumes {
				if v.Name == mount.Name {
					vol = &pod.Spec.Volumes[i]
				}
			}
			file := strings.TrimPrefix(caFile, mount.MountPath+"/")
			switch {
			case vol == nil || vol.Secret == nil:
				t.Errorf("%s: mount %s is not a Secret volume: %+v", what, mount.Name, vol)
			case vol.Secret.SecretName != "eventreg-db-ca" || len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Path != file:
				t.Errorf("%s: volume %s does not put eventreg-db-ca's CA at %s: %+v", what, vol.Name, caFile, vol.Secret)
			}
			if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tmp" && v.EmptyDir != nil }) {
				t.Errorf("%s: extraVolumes replaced the chart's own /tmp volume", what)
			}
		}
	}
	t.Run("a volume may not take the chart's name", func(t *testing.T) {
		_, err := install(t, releaseName, valuesOf(t, "serviceDefaults: {extraVolumes: [{name: tmp, emptyDir: {}}]}"))
		if err == nil || !strings.Contains(err.Error(), "extraVolumes") {
			t.Errorf("extraVolumes named tmp: error %v", err)
		}
	})
}

// escapeHatchValues use every escape hatch, globally and per service.
const escapeHatchValues = `
config:
  issuer: https://api.events.example.com
serviceDefaults:
  extraEnv:
    - name: HTTP_WRITE_TIMEOUT
      value: 45s
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
  extraEnvFrom:
    - configMapRef:
        name: eventreg-tuning
      prefix: EVENTREG_
  initContainers:
    - name: wait-for-db
      image: busybox:1.37.0
      command: ["sh", "-c", "true"]
  sidecars:
    - name: cloud-sql-proxy
      image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1
      args: ["--port=5432", "project:region:instance"]
      securityContext:
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities:
          drop: [ALL]
  podAnnotations:
    example.com/team: events
  podLabels:
    example.com/cost-centre: cons
  serviceAccount:
    annotations:
      iam.gke.io/gcp-service-account: eventreg@project.iam.gserviceaccount.com
  priorityClassName: eventreg-high
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - key: pool
                operator: In
                values: [apps]
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: ScheduleAnyway
services:
  auth:
    extraEnv:
      - name: ACCESS_TOKEN_TTL
        value: 15m
    serviceAccount:
      annotations:
        iam.gke.io/gcp-service-account: eventreg-auth@project.iam.gserviceaccount.com
  users:
    podAntiAffinity: none
    podAnnotations:
      example.com/team: people
`

func TestChartEscapeHatches(t *testing.T) {
	r := render(t, escapeHatchValues)
	for _, svc := range services {
		selector := map[string]string{"app.kubernetes.io/name": "eventreg", "app.kubernetes.io/instance": releaseName, "app.kubernetes.io/component": svc}
		wantSA := map[string]string{"auth": "eventreg-auth@project.iam.gserviceaccount.com"}[svc]
		if wantSA == "" {
			wantSA = "eventreg@project.iam.gserviceaccount.com"
		}
		sa := r.get(t, "ServiceAccount", releaseName+"-"+svc).(*corev1.ServiceAccount)
		if got := sa.Annotations["iam.gke.io/gcp-service-account"]; got != wantSA {
			t.Errorf("ServiceAccount %s: workload identity %q, want %q", sa.Name, got, wantSA)
		}
		for what, pod := range podsOfService(t, r, svc) {
			spec, c := pod.Spec, pod.Spec.Containers[0]
			isJob := strings.HasPrefix(what, "Job")

			// environment: extraEnv after the chart's, replacing a variable of the same name
			if svc == "auth" {
				if envValue(c, "ACCESS_TOKEN_TTL") != "15m" || strings.Count(renderedEnv(c), "ACCESS_TOKEN_TTL") != 1 || envIndex(c, "HTTP_WRITE_TIMEOUT") >= 0 {
					t.Errorf("%s: services.auth.extraEnv should replace the default list and ACCESS_TOKEN_TTL: %s", what, renderedEnv(c))
				}
			} else {
				ip := c.Env[envIndex(c, "POD_IP")]
				if envValue(c, "HTTP_WRITE_TIMEOUT") != "45s" || ip.ValueFrom == nil || ip.ValueFrom.FieldRef.FieldPath != "status.podIP" {
					t.Errorf("%s: extraEnv not rendered: %+v", what, c.Env)
				}
			}
			if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != "eventreg-tuning" || c.EnvFrom[0].Prefix != "EVENTREG_" {
				t.Errorf("%s: envFrom %+v", what, c.EnvFrom)
			}

			// sidecars as native sidecars first, then the init containers
			var inits []string
			for _, ic := range spec.InitContainers {
				inits = append(inits, ic.Name)
			}
			if !slices.Equal(inits, []string{"cloud-sql-proxy", "wait-for-db"}) {
				t.Errorf("%s: initContainers %v, want the sidecar then the init container", what, inits)
			} else if rp := spec.InitContainers[0].RestartPolicy; rp == nil || *rp != corev1.ContainerRestartPolicyAlways || spec.InitContainers[1].RestartPolicy != nil {
				t.Errorf("%s: the sidecar is not a native sidecar (restartPolicy Always) or the init container is", what)
			}
			if len(spec.Containers) != 1 {
				t.Errorf("%s: %d containers; sidecars belong in initContainers so that Jobs complete", what, len(spec.Containers))
			}

			// metadata
			wantTeam := map[bool]string{true: "people", false: "events"}[svc == "users"]
			if pod.Annotations["example.com/team"] != wantTeam || pod.Labels["example.com/cost-centre"] != "cons" {
				t.Errorf("%s: podAnnotations/podLabels %v %v", what, pod.Annotations, pod.Labels)
			}
			if spec.PriorityClassName != "eventreg-high" {
				t.Errorf("%s: priorityClassName %q", what, spec.PriorityClassName)
			}
			if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil ||
				spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key != "pool" {
				t.Errorf("%s: affinity.nodeAffinity not rendered: %+v", what, spec.Affinity)
			}
			if isJob {
				if spec.ServiceAccountName != "" && r.has("ServiceAccount", spec.ServiceAccountName) {
					t.Errorf("%s: runs as %s, which the release makes after pre-install hooks", what, spec.ServiceAccountName)
				}
				continue
			}
			if spec.ServiceAccountName != sa.Name {
				t.Errorf("%s: serviceAccountName %q, want %s", what, spec.ServiceAccountName, sa.Name)
			}
			// the default soft anti-affinity joins the values' nodeAffinity, except where turned off
			anti := spec.Affinity.PodAntiAffinity
			if svc == "users" {
				if anti != nil {
					t.Errorf("%s: podAntiAffinity none still renders %+v", what, anti)
				}
			} else if anti == nil || len(anti.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
				!maps.Equal(anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels, selector) {
				t.Errorf("%s: podAntiAffinity %+v, want the soft default for the service", what, anti)
			}
			tsc := spec.TopologySpreadConstraints
			if len(tsc) != 1 || tsc[0].LabelSelector == nil || !maps.Equal(tsc[0].LabelSelector.MatchLabels, selector) {
				t.Errorf("%s: topologySpreadConstraints %+v, want the service's own pods selected", what, tsc)
			}
		}
	}

	t.Run("default: soft anti-affinity per service across nodes", func(t *testing.T) {
		r := render(t, "")
		for _, svc := range services {
			d := r.deployment(t, svc)
			a := d.Spec.Template.Spec.Affinity
			if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 ||
				len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
				t.Fatalf("%s: affinity %+v, want one preferred pod anti-affinity term", d.Name, a)
			}
			term := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
			if term.TopologyKey != "kubernetes.io/hostname" || !maps.Equal(term.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
				t.Errorf("%s: anti-affinity term %+v, want kubernetes.io/hostname over the Deployment's own selector", d.Name, term)
			}
			if d.Spec.Template.Spec.ServiceAccountName != d.Name || !r.has("ServiceAccount", d.Name) {
				t.Errorf("%s: runs as %q, want the chart's ServiceAccount %s", d.Name, d.Spec.Template.Spec.ServiceAccountName, d.Name)
			}
		}
	})

	t.Run("an existing ServiceAccount is used by the Deployments and the Jobs", func(t *testing.T) {
		r := render(t, "serviceDefaults: {serviceAccount: {create: false, name: eventreg-wi}}")
		if sas := r.ofKind("ServiceAccount"); len(sas) != 0 {
			t.Errorf("serviceAccount.create false still renders %s", r.inventory())
		}
		for _, svc := range services {
			for what, pod := range podsOfService(t, r, svc) {
				if pod.Spec.ServiceAccountName != "eventreg-wi" {
					t.Errorf("%s: serviceAccountName %q, want eventreg-wi", what, pod.Spec.ServiceAccountName)
				}
			}
		}
	})

	t.Run("services naming one ServiceAccount share it", func(t *testing.T) {
		r := render(t, "serviceDefaults: {serviceAccount: {name: eventreg, annotations: {eks.amazonaws.com/role-arn: 'arn:aws:iam::1:role/eventreg'}}}")
		sas := r.ofKind("ServiceAccount")
		if len(sas) != 1 || sas[0].name != "eventreg" {
			t.Errorf("want one ServiceAccount eventreg, have %s", r.inventory())
		}
		for _, svc := range services {
			if got := r.deployment(t, svc).Spec.Template.Spec.ServiceAccountName; got != "eventreg" {
				t.Errorf("%s runs as %q", svc, got)
			}
		}
	})

	for name, tc := range map[string]struct{ vals, want string }{
		"a shared ServiceAccount with two sets of annotations": {
			"serviceDefaults: {serviceAccount: {name: shared}}\nservices: {auth: {serviceAccount: {annotations: {a: b}}}}", "different serviceAccount.annotations"},
		"podLabels replacing the chart's": {"services: {auth: {podLabels: {app.kubernetes.io/component: web}}}", "the chart sets this label itself"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := install(t, releaseName, valuesOf(t, tc.vals))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestChartSchemaTypesEscapeHatches: the schema holds the escape hatches to the
// Kubernetes shapes, so a mistake fails helm install instead of the API server
// (or, worse, nothing).
func TestChartSchemaTypesEscapeHatches(t *testing.T) {
	for name, tc := range map[string]struct{ vals, want string }{
		"env var without a name":         {"serviceDefaults: {extraEnv: [{value: x}]}", "/serviceDefaults/extraEnv/0"},
		"env var with value and from":    {"serviceDefaults: {extraEnv: [{name: A, value: x, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]}", "/serviceDefaults/extraEnv/0"},
		"env var with a typo":            {"serviceDefaults: {extraEnv: [{name: A, valu: x}]}", "'valu' not allowed"},
		"secretKeyRef without key":       {"serviceDefaults: {extraEnv: [{name: A, valueFrom: {secretKeyRef: {name: s}}}]}", "/serviceDefaults/extraEnv/0/valueFrom/secretKeyRef"},
		"envFrom without a source":       {"serviceDefaults: {extraEnvFrom: [{prefix: A_}]}", "/serviceDefaults/extraEnvFrom/0"},
		"volume with a typo'd source":    {"serviceDefaults: {extraVolumes: [{name: ca, secrte: {secretName: x}}]}", "invalid propertyName 'secrte'"},
		"volume without a source":        {"serviceDefaults: {extraVolumes: [{name: ca}]}", "/serviceDefaults/extraVolumes/0"},
		"mount without a path":           {"serviceDefaults: {extraVolumeMounts: [{name: ca}]}", "/serviceDefaults/extraVolumeMounts/0"},
		"relative mount path":            {"serviceDefaults: {extraVolumeMounts: [{name: ca, mountPath: etc/ca}]}", "/serviceDefaults/extraVolumeMounts/0/mountPath"},
		"sidecar without an image":       {"services: {auth: {sidecars: [{name: proxy}]}}", "/services/auth/sidecars/0"},
		"sidecar that is not a sidecar":  {"serviceDefaults: {sidecars: [{name: p, image: 'p:1', restartPolicy: Never}]}", "/serviceDefaults/sidecars/0/restartPolicy"},
		"init container with a typo":     {"serviceDefaults: {initContainers: [{name: i, image: 'i:1', comand: [x]}]}", "'comand' not allowed"},
		"spread without maxSkew":         {"serviceDefaults: {topologySpreadConstraints: [{topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}", "/serviceDefaults/topologySpreadConstraints/0"},
		"affinity with a typo":           {"serviceDefaults: {affinity: {nodeAfinity: {}}}", "'nodeAfinity' not allowed"},
		"toleration with a bad operator": {"serviceDefaults: {tolerations: [{key: k, operator: Equals}]}", "/serviceDefaults/tolerations/0/operator"},
		"unknown anti-affinity preset":   {"serviceDefaults: {podAntiAffinity: hard}", "/serviceDefaults/podAntiAffinity"},
		"service account typo":           {"serviceDefaults: {serviceAccount: {annotation: {}}}", "'annotation' not allowed"},
		"annotation that is a map":       {"serviceDefaults: {podAnnotations: {a: {b: c}}}", "/serviceDefaults/podAnnotations/a"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := install(t, releaseName, valuesOf(t, tc.vals))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm install with %s: error %v, want one naming %q", tc.vals, err, tc.want)
			}
		})
	}
}

// TestChartIssuer: config.issuer, else the Ingress's host, else the HTTPRoute's
// first hostname; with none of them the install fails and says what to set.
func TestChartIssuer(t *testing.T) {
	issuerOf := func(t *testing.T, r rendered) string {
		t.Helper()
		got := ""
		for _, svc := range services {
			v := envValue(r.deployment(t, svc).Spec.Template.Spec.Containers[0], "AUTH_ISSUER")
			if got != "" && v != got {
				t.Errorf("AUTH_ISSUER differs between services: %q and %q", got, v)
			}
			got = v
		}
		script := strings.Join(r.get(t, "Pod", releaseName+"-test-api").(*corev1.Pod).Spec.Containers[0].Args, "\n")
		if !strings.Contains(script, `'"`+got+`"'`) {
			t.Errorf("the helm test expects another issuer than %q", got)
		}
		return got
	}
	for name, tc := range map[string]struct{ vals, want string }{
		"config.issuer wins":            {"config: {issuer: 'https://id.example.com/eventreg'}\ningress: {host: api.example.com}", "https://id.example.com/eventreg"},
		"from the Ingress host":         {"ingress: {host: api.example.com}", "https://api.example.com"},
		"from the HTTPRoute's hostname": {"ingress: {enabled: false}\nhttpRoute: {enabled: true, parentRefs: [{name: gw}], hostnames: [api.example.net, other.example.net]}", "https://api.example.net"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := issuerOf(t, render(t, tc.vals)); got != tc.want {
				t.Errorf("AUTH_ISSUER %q, want %q", got, tc.want)
			}
		})
	}
	for name, vals := range map[string]string{
		"neither Ingress nor HTTPRoute":   "ingress: {enabled: false}",
		"an HTTPRoute without hostnames":  "ingress: {enabled: false}\nhttpRoute: {enabled: true, parentRefs: [{name: gw}]}",
		"a disabled HTTPRoute's hostname": "ingress: {enabled: false}\nhttpRoute: {enabled: false, hostnames: [api.example.net]}",
	} {
		t.Run("fails: "+name, func(t *testing.T) {
			_, err := install(t, releaseName, valuesOf(t, vals))
			if err == nil || !strings.Contains(err.Error(), "config.issuer is required") {
				t.Errorf("error %v, want one saying config.issuer is required", err)
			}
		})
	}
	t.Run("a chart without httpRoute values", func(t *testing.T) {
		// The helper reads httpRoute with dig: a values file without it (an
		// older values.yaml, or a parent chart's) must give the same answers.
		c := withoutHTTPRoute(t)
		for vals, want := range map[string]string{"ingress: {host: api.example.com}": "https://api.example.com", "ingress: {enabled: false}": ""} {
			rel, err := installChart(t, c, releaseName, valuesOf(t, vals))
			switch {
			case want == "" && (err == nil || !strings.Contains(err.Error(), "config.issuer is required")):
				t.Errorf("%s: error %v, want config.issuer is required", vals, err)
			case want != "" && err != nil:
				t.Errorf("%s: %v", vals, err)
			case want != "" && !strings.Contains(rel.Manifest, "value: "+want+"\n"):
				t.Errorf("%s: AUTH_ISSUER %s not in the render", vals, want)
			}
		}
	})
}

// withoutHTTPRoute is the chart without the httpRoute value and the templates that read it.
func withoutHTTPRoute(t *testing.T) *chart.Chart {
	t.Helper()
	orig := eventregChart(t)
	c := *orig
	c.Values = maps.Clone(orig.Values)
	delete(c.Values, "httpRoute")
	c.Schema = nil
	c.Templates = nil
	for _, tmpl := range orig.Templates {
		if strings.HasSuffix(tmpl.Name, "_helpers.tpl") || !bytes.Contains(tmpl.Data, []byte("httpRoute")) {
			c.Templates = append(c.Templates, tmpl)
		}
	}
	return &c
}

// TestChartPrometheusRule: the alert rules of deploy/observability as a
// PrometheusRule, decoded strictly into prometheus-operator's type.
func TestChartPrometheusRule(t *testing.T) {
	if r := render(t, ""); len(r.ofKind("PrometheusRule")) != 0 {
		t.Errorf("a PrometheusRule by default (needs the prometheus-operator CRDs): %s", r.inventory())
	}
	r := render(t, "metrics: {prometheusRule: {enabled: true, labels: {release: kube-prometheus-stack}}}")
	rule := r.get(t, "PrometheusRule", releaseName).(*monitoringv1.PrometheusRule)
	if rule.Labels["release"] != "kube-prometheus-stack" || rule.Labels["app.kubernetes.io/instance"] != releaseName {
		t.Errorf("PrometheusRule labels %v", rule.Labels)
	}
	var src struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict([]byte(readRepoFile(t, "deploy/observability/alerts.yaml")), &src); err != nil {
		t.Fatalf("deploy/observability/alerts.yaml: %v", err)
	}
	if len(rule.Spec.Groups) != len(src.Groups) || len(src.Groups) == 0 {
		t.Fatalf("PrometheusRule has %d groups, alerts.yaml %d", len(rule.Spec.Groups), len(src.Groups))
	}
	alerts := 0
	for i, g := range rule.Spec.Groups {
		sg := src.Groups[i]
		if g.Name != sg.Name || len(g.Rules) != len(sg.Rules) {
			t.Errorf("group %d: %s with %d rules, alerts.yaml %s with %d", i, g.Name, len(g.Rules), sg.Name, len(sg.Rules))
			continue
		}
		for j, rl := range g.Rules {
			sr := sg.Rules[j]
			alerts++
			if rl.Alert != sr.Alert || rl.Expr.String() != sr.Expr || !maps.Equal(rl.Labels, sr.Labels) || !maps.Equal(rl.Annotations, sr.Annotations) {
				t.Errorf("rule %s differs from alerts.yaml's %s", rl.Alert, sr.Alert)
			}
			if rl.Labels["severity"] == "" || rl.Annotations["summary"] == "" || strings.TrimSpace(rl.Expr.String()) == "" {
				t.Errorf("rule %q lacks severity, summary or expr", rl.Alert)
			}
			if strings.Count(rl.Expr.String(), "(") != strings.Count(rl.Expr.String(), ")") {
				t.Errorf("rule %q: unbalanced parentheses in %s", rl.Alert, rl.Expr.String())
			}
			if rl.For != nil {
				if _, err := time.ParseDuration(string(*rl.For)); err != nil || string(*rl.For) != sr.For {
					t.Errorf("rule %q: for %q (alerts.yaml %q): %v", rl.Alert, *rl.For, sr.For, err)
				}
			}
			// Helm must not have evaluated the rules' own templates
			if strings.Contains(sr.Annotations["summary"], "{{") && rl.Annotations["summary"] != sr.Annotations["summary"] {
				t.Errorf("rule %q: summary %q, want alerts.yaml's %q", rl.Alert, rl.Annotations["summary"], sr.Annotations["summary"])
			}
		}
	}
	if alerts == 0 {
		t.Error("the PrometheusRule holds no alert")
	}
}

// TestChartDashboards: a ConfigMap per Grafana dashboard, holding the file as is,
// with the label Grafana's sidecar looks for.
func TestChartDashboards(t *testing.T) {
	if r := render(t, ""); len(r.ofKind("ConfigMap")) != 0 {
		t.Errorf("dashboard ConfigMaps by default: %s", r.inventory())
	}
	files, _ := filepath.Glob(repoPath(t, "deploy/observability/dashboards/*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboards in deploy/observability/dashboards")
	}
	for name, tc := range map[string]struct {
		vals   string
		labels map[string]string
	}{
		"default label":  {"metrics: {dashboards: {enabled: true, annotations: {grafana_folder: eventreg}}}", map[string]string{"grafana_dashboard": "1"}},
		"labels changed": {"metrics: {dashboards: {enabled: true, labels: {grafana_dashboard: null, dashboards: grafana}}}", map[string]string{"dashboards": "grafana"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.vals)
			if got := len(r.ofKind("ConfigMap")); got != len(files) {
				t.Errorf("%d dashboard ConfigMaps for %d dashboards", got, len(files))
			}
			for _, f := range files {
				base := filepath.Base(f)
				cm := r.get(t, "ConfigMap", releaseName+"-dashboard-"+strings.TrimSuffix(base, ".json")).(*corev1.ConfigMap)
				for k, v := range tc.labels {
					if cm.Labels[k] != v {
						t.Errorf("%s: label %s=%q, want %q", cm.Name, k, cm.Labels[k], v)
					}
				}
				if _, ok := cm.Labels["grafana_dashboard"]; ok && tc.labels["grafana_dashboard"] == "" {
					t.Errorf("%s: the default label stayed although removed", cm.Name)
				}
				if name == "default label" && cm.Annotations["grafana_folder"] != "eventreg" {
					t.Errorf("%s: annotations %v", cm.Name, cm.Annotations)
				}
				want, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if cm.Data[base] != string(want) {
					t.Errorf("%s: data[%s] is not %s as is", cm.Name, base, f)
				}
				var d struct {
					UID string `json:"uid"`
				}
				if err := json.Unmarshal([]byte(cm.Data[base]), &d); err != nil || d.UID == "" {
					t.Errorf("%s: not a dashboard with a uid: %v", cm.Name, err)
				}
			}
		})
	}
}

// TestChartObservabilityFilesAreCopies: Helm packages nothing outside the
// chart, so the chart carries copies of deploy/observability's files; they
// must not drift from the originals (e2e checks the originals' metrics).
func TestChartObservabilityFilesAreCopies(t *testing.T) {
	originals := map[string]string{"alerts.yaml": "deploy/observability/alerts.yaml"}
	dash, _ := filepath.Glob(repoPath(t, "deploy/observability/dashboards/*.json"))
	for _, f := range dash {
		originals["dashboards/"+filepath.Base(f)] = "deploy/observability/dashboards/" + filepath.Base(f)
	}
	copies, _ := filepath.Glob(repoPath(t, chartRel+"/files/dashboards/*.json"))
	for _, f := range copies {
		if _, ok := originals["dashboards/"+filepath.Base(f)]; !ok {
			t.Errorf("%s/files/dashboards/%s has no original in deploy/observability/dashboards", chartRel, filepath.Base(f))
		}
	}
	for cp, orig := range originals {
		want := readRepoFile(t, orig)
		got, err := os.ReadFile(repoPath(t, chartRel+"/files/"+cp))
		if err != nil {
			t.Errorf("%s is not copied into the chart: %v (cp %s %s/files/%s)", orig, err, orig, chartRel, cp)
			continue
		}
		if string(got) != want {
			t.Errorf("%s/files/%s differs from %s; copy it again: cp %s %s/files/%s", chartRel, cp, orig, orig, chartRel, cp)
		}
	}
}

// TestChartNoConfigMapForPods: decision 0086 says reloads on configuration
// change need no checksum annotation because the services' pods mount no
// ConfigMap the chart renders; this keeps that true (or fails, asking for
// checksum/config).
func TestChartNoConfigMapForPods(t *testing.T) {
	r := render(t, "metrics: {dashboards: {enabled: true}}")
	configMaps := map[string]bool{}
	for _, o := range r.ofKind("ConfigMap") {
		configMaps[o.name] = true
	}
	for _, svc := range services {
		for what, pod := range podsOfService(t, r, svc) {
			for _, v := range pod.Spec.Volumes {
				if v.ConfigMap != nil && configMaps[v.ConfigMap.Name] && pod.Annotations["checksum/config"] == "" {
					t.Errorf("%s mounts the chart's ConfigMap %s without a checksum/config annotation", what, v.ConfigMap.Name)
				}
			}
			for _, c := range pod.Spec.Containers {
				for _, e := range c.EnvFrom {
					if e.ConfigMapRef != nil && configMaps[e.ConfigMapRef.Name] && pod.Annotations["checksum/config"] == "" {
						t.Errorf("%s reads the chart's ConfigMap %s without a checksum/config annotation", what, e.ConfigMapRef.Name)
					}
				}
			}
		}
	}
}

func valuesOf(t *testing.T, vals string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(vals), &v); err != nil {
		t.Fatalf("test values %q: %v", vals, err)
	}
	return v
}

// TestChartRedisCluster: config.redisCluster tells every service that uses
// Redis to read its URL as a cluster's seed nodes; off, nothing is set.
func TestChartRedisCluster(t *testing.T) {
	on := render(t, "config: {redisCluster: true}")
	off := render(t, "")
	for _, svc := range services {
		c := on.deployment(t, svc).Spec.Template.Spec.Containers[0]
		if envIndex(c, "REDIS_URL") >= 0 && envValue(c, "REDIS_CLUSTER") != "true" {
			t.Errorf("%s: REDIS_URL without REDIS_CLUSTER=true in %s", svc, renderedEnv(c))
		}
		if svc == "auth" && envValue(c, "REDIS_CLUSTER") != "true" {
			t.Errorf("auth: REDIS_CLUSTER %q", envValue(c, "REDIS_CLUSTER"))
		}
		if envIndex(off.deployment(t, svc).Spec.Template.Spec.Containers[0], "REDIS_CLUSTER") >= 0 {
			t.Errorf("%s: REDIS_CLUSTER set by default", svc)
		}
	}
}
