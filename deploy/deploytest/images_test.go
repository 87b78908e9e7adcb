package deploytest

import (
	"strings"
	"testing"
)

const (
	digestA = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	digestB = "sha256:" + "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

// chartImages is each service's image in the Deployment and in its migration
// Job, which must be the same.
func chartImages(t *testing.T, r rendered) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, svc := range services {
		d := r.deployment(t, svc)
		img := d.Spec.Template.Spec.Containers[0].Image
		if job := r.job(t, d.Name+"-migrate").Spec.Template.Spec.Containers[0].Image; job != img {
			t.Errorf("%s: migration Job runs %s, the Deployment %s", svc, job, img)
		}
		out[svc] = img
	}
	return out
}

// TestChartImageReference: <registry>/eventreg-<service>:<appVersion> by
// default (what the release workflow pushes), <registry>/<repo>@<digest> once
// a digest is set, per service or for all.
func TestChartImageReference(t *testing.T) {
	appVersion := eventregChart(t).Metadata.AppVersion
	for name, tc := range map[string]struct {
		vals string
		want map[string]string // service -> image; missing: the default
	}{
		"defaults": {vals: ""},
		"digest for one service": {
			vals: "services: {auth: {image: {digest: " + digestA + "}}}",
			want: map[string]string{"auth": "ghcr.io/eventreg/eventreg-auth@" + digestA},
		},
		"digest wins over a tag": {
			vals: "serviceDefaults: {image: {tag: '2.0.0'}}\nservices: {users: {image: {digest: " + digestB + "}}}",
			want: map[string]string{
				"auth":          "ghcr.io/eventreg/eventreg-auth:2.0.0",
				"users":         "ghcr.io/eventreg/eventreg-users@" + digestB,
				"volunteers":    "ghcr.io/eventreg/eventreg-volunteers:2.0.0",
				"registrations": "ghcr.io/eventreg/eventreg-registrations:2.0.0",
				"dealers":       "ghcr.io/eventreg/eventreg-dealers:2.0.0",
			},
		},
		"digest in the defaults, own registry and repository": {
			vals: "serviceDefaults: {image: {registry: registry.example.com/mirror, digest: " + digestA + "}}\n" +
				"services: {registrations: {image: {repository: regs}}}",
			want: map[string]string{
				"auth":          "registry.example.com/mirror/eventreg-auth@" + digestA,
				"users":         "registry.example.com/mirror/eventreg-users@" + digestA,
				"volunteers":    "registry.example.com/mirror/eventreg-volunteers@" + digestA,
				"registrations": "registry.example.com/mirror/regs@" + digestA,
				"dealers":       "registry.example.com/mirror/eventreg-dealers@" + digestA,
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := chartImages(t, render(t, tc.vals))
			for _, svc := range services {
				want, ok := tc.want[svc]
				if !ok {
					want = "ghcr.io/eventreg/eventreg-" + svc + ":" + appVersion
				}
				if got[svc] != want {
					t.Errorf("%s: image %s, want %s", svc, got[svc], want)
				}
				if !pinned(got[svc]) {
					t.Errorf("%s: image %s is not pinned", svc, got[svc])
				}
			}
		})
	}
}

func TestChartRejectsBadDigests(t *testing.T) {
	for _, bad := range []string{
		"sha256:0123",                // short
		strings.ToUpper(digestA[7:]), // no algorithm
		"sha256:" + strings.ToUpper(digestA[7:]),
		"sha512:" + digestA[7:],
		"ghcr.io/eventreg/eventreg-auth@" + digestA, // a reference, not a digest
	} {
		for _, at := range []struct{ vals, path string }{
			{"services: {auth: {image: {digest: '" + bad + "'}}}", "/services/auth/image/digest"},
			{"serviceDefaults: {image: {digest: '" + bad + "'}}", "/serviceDefaults/image/digest"},
		} {
			var v map[string]any
			if err := yamlUnmarshal(at.vals, &v); err != nil {
				t.Fatal(err)
			}
			_, err := install(t, releaseName, v)
			if err == nil || !strings.Contains(err.Error(), at.path) {
				t.Errorf("digest %q at %s: error %v, want the schema to reject it", bad, at.path, err)
			}
		}
	}
}
