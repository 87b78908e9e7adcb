package deploytest

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"
)

const releaseWorkflow = ".github/workflows/release.yaml"

// The release workflow, decoded strictly: a key this struct does not know
// (another trigger, a job-level permission block, an unexpected step field)
// fails the test, so a change to the workflow's shape is a change here too.
type ghWorkflow struct {
	Name string `yaml:"name"`
	On   struct {
		Push struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	} `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Env         map[string]string `yaml:"env"`
	Defaults    struct {
		Run struct {
			Shell string `yaml:"shell"`
		} `yaml:"run"`
	} `yaml:"defaults"`
	Jobs map[string]ghJob `yaml:"jobs"`
}

// ghJob has no permissions field: a job may not widen the workflow's.
type ghJob struct {
	Name           string `yaml:"name"`
	Needs          ghList `yaml:"needs"`
	RunsOn         string `yaml:"runs-on"`
	TimeoutMinutes int    `yaml:"timeout-minutes"`
	Strategy       struct {
		FailFast bool `yaml:"fail-fast"`
		Matrix   struct {
			Service []string `yaml:"service"`
		} `yaml:"matrix"`
	} `yaml:"strategy"`
	Steps []ghStep `yaml:"steps"`
}

type ghStep struct {
	ID   string            `yaml:"id"`
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

// ghList is a string or a list of strings (`needs: images`).
type ghList []string

func (l *ghList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = ghList{n.Value}
		return nil
	}
	var s []string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*l = s
	return nil
}

func readReleaseWorkflow(t *testing.T) ghWorkflow {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(readRepoFile(t, releaseWorkflow)))
	dec.KnownFields(true)
	var wf ghWorkflow
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("%s: %v", releaseWorkflow, err)
	}
	return wf
}

// stepIndex is the index of the first step that matches, or -1.
func stepIndex(steps []ghStep, match func(ghStep) bool) int {
	return slices.IndexFunc(steps, match)
}

func uses(action string) func(ghStep) bool {
	return func(s ghStep) bool { return strings.HasPrefix(s.Uses, action+"@") }
}

func runs(substr string) func(ghStep) bool {
	return func(s ghStep) bool { return strings.Contains(s.Run, substr) }
}

// evaluate resolves what the test can know of a step's script: ${{ env.X }}
// and ${{ matrix.service }} expressions, then the shell variables set by the
// step's and the workflow's env. Quotes are dropped; other expressions stay.
func (wf ghWorkflow) evaluate(step ghStep, service, s string) string {
	expr := func(s string) string {
		s = regexp.MustCompile(`\$\{\{\s*env\.(\w+)\s*\}\}`).ReplaceAllStringFunc(s, func(m string) string {
			name := regexp.MustCompile(`env\.(\w+)`).FindStringSubmatch(m)[1]
			if v, ok := step.Env[name]; ok {
				return v
			}
			return wf.Env[name]
		})
		return regexp.MustCompile(`\$\{\{\s*matrix\.service\s*\}\}`).ReplaceAllString(s, service)
	}
	vars := maps.Clone(wf.Env)
	if vars == nil {
		vars = map[string]string{}
	}
	for k, v := range step.Env {
		vars[k] = expr(v)
	}
	s = expr(s)
	s = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`).ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m, "${}")
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
	return strings.ReplaceAll(s, `"`, "")
}

// chartDefaults are the image repositories the chart's default values name
// (registry/eventreg-<service>, tag cut off) and the registry they are in.
func chartDefaults(t *testing.T) (repos map[string]string, registry string) {
	t.Helper()
	repos = map[string]string{}
	r := render(t, "")
	appVersion := eventregChart(t).Metadata.AppVersion
	for _, svc := range services {
		img := r.deployment(t, svc).Spec.Template.Spec.Containers[0].Image
		repo, ok := strings.CutSuffix(img, ":"+appVersion)
		if !ok {
			t.Fatalf("%s: default image %s is not tagged with the appVersion %s", svc, img, appVersion)
		}
		repos[svc] = repo
	}
	image := eventregChart(t).Values["serviceDefaults"].(map[string]any)["image"].(map[string]any)
	return repos, image["registry"].(string)
}

// shellcheckPath is the shellcheck binary, which `make test`
// (deploy/scripts/test.sh) installs. Without it a test that lints shell
// scripts skips that part, saying so, except in CI, where it fails.
func shellcheckPath(t *testing.T) string {
	t.Helper()
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("shellcheck is not installed; deploy/scripts/test.sh installs it (apt-get install shellcheck)")
		}
		t.Log("shellcheck is not installed: shell scripts are not checked by it")
	}
	return sc
}

// lintWorkflow runs actionlint, with shellcheck on the run: scripts when
// sc is set, over one workflow file.
func lintWorkflow(t *testing.T, sc, name, raw string) []*actionlint.Error {
	t.Helper()
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{Color: actionlint.ColorOptionKindNever, Shellcheck: sc})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(name, []byte(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	return errs
}

// TestReleaseWorkflow checks .github/workflows/release.yaml, which cannot run
// here: actionlint (with shellcheck on the scripts; in CI shellcheck must be
// installed, and a known-bad script proves actionlint runs it), then
// its shape — a v* tag trigger, the minimal permissions, actions pinned by
// commit, one multi-arch build per service pushed where the chart's defaults
// pull from and signed, and the chart pushed beside the images and signed.
func TestReleaseWorkflow(t *testing.T) {
	raw := readRepoFile(t, releaseWorkflow)

	t.Run("actionlint", func(t *testing.T) {
		sc := shellcheckPath(t)
		for _, e := range lintWorkflow(t, sc, releaseWorkflow, raw) {
			t.Errorf("%s:%d:%d: %s [%s]", releaseWorkflow, e.Line, e.Column, e.Message, e.Kind)
		}
		if sc == "" {
			return
		}
		// the canary: an unquoted expansion shellcheck reports (SC2086)
		canary := "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: rm $FILES\n"
		var found bool
		for _, e := range lintWorkflow(t, sc, "canary.yaml", canary) {
			found = found || (e.Kind == "shellcheck" && strings.Contains(e.Message, "SC2086"))
		}
		if !found {
			t.Errorf("actionlint did not report shellcheck's SC2086 in a known-bad run: script; is %s run at all?", sc)
		}
	})

	wf := readReleaseWorkflow(t)
	repos, registry := chartDefaults(t)

	t.Run("trigger and permissions", func(t *testing.T) {
		if !slices.Equal(wf.On.Push.Tags, []string{"v*"}) {
			t.Errorf("on.push.tags %v, want [v*]", wf.On.Push.Tags)
		}
		want := map[string]string{"contents": "read", "packages": "write", "id-token": "write"}
		if !maps.Equal(wf.Permissions, want) {
			t.Errorf("permissions %v, want exactly %v", wf.Permissions, want)
		}
		if wf.Defaults.Run.Shell != "bash" {
			t.Errorf("defaults.run.shell %q: want bash, which GitHub runs with -o pipefail (the chart job pipes helm push into tee)", wf.Defaults.Run.Shell)
		}
	})

	t.Run("actions pinned by commit", func(t *testing.T) {
		pinnedUse := regexp.MustCompile(`^\s*-?\s*uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s*v\d+(\.\d+)*\s*$`)
		n := 0
		for i, line := range strings.Split(raw, "\n") {
			if !regexp.MustCompile(`^\s*-?\s*uses:`).MatchString(line) {
				continue
			}
			n++
			if !pinnedUse.MatchString(line) {
				t.Errorf("line %d: %q: pin actions by full commit SHA with a `# vX.Y.Z` comment", i+1, strings.TrimSpace(line))
			}
		}
		if n == 0 {
			t.Error("no uses: lines found")
		}
	})

	var imagesJob string
	t.Run("images", func(t *testing.T) {
		for name, j := range wf.Jobs {
			if len(j.Strategy.Matrix.Service) > 0 {
				imagesJob = name
			}
		}
		j, ok := wf.Jobs[imagesJob]
		if !ok {
			t.Fatal("no job with a matrix over service")
		}
		if got := slices.Sorted(slices.Values(j.Strategy.Matrix.Service)); !slices.Equal(got, slices.Sorted(slices.Values(services))) {
			t.Errorf("matrix.service %v, want the four services %v", j.Strategy.Matrix.Service, services)
		}
		build := stepIndex(j.Steps, uses("docker/build-push-action"))
		if build < 0 {
			t.Fatal("no docker/build-push-action step")
		}
		b := j.Steps[build]
		if i := stepIndex(j.Steps, uses("docker/setup-buildx-action")); i < 0 || i > build {
			t.Error("docker/setup-buildx-action does not come before the build")
		}
		if i := stepIndex(j.Steps, uses("docker/login-action")); i < 0 || i > build || j.Steps[i].With["registry"] != strings.Split(registry, "/")[0] {
			t.Errorf("no docker/login-action to %s before the build", strings.Split(registry, "/")[0])
		}
		if b.With["context"] != "." || b.With["file"] != "deploy/docker/Dockerfile" {
			t.Errorf("builds %s from %s, want deploy/docker/Dockerfile from the repository root", b.With["file"], b.With["context"])
		}
		var platforms []string
		for _, p := range strings.Split(b.With["platforms"], ",") {
			platforms = append(platforms, strings.TrimSpace(p))
		}
		for _, want := range []string{"linux/amd64", "linux/arm64"} {
			if !slices.Contains(platforms, want) {
				t.Errorf("platforms %v lack %s", platforms, want)
			}
		}
		if b.With["push"] != "true" {
			t.Errorf("push: %q, want true", b.With["push"])
		}
		if b.ID == "" {
			t.Fatal("the build step has no id: its digest output cannot be signed")
		}
		sign := stepIndex(j.Steps, runs("cosign sign"))
		if i := stepIndex(j.Steps, uses("sigstore/cosign-installer")); i < 0 || sign < 0 || i > sign || sign < build {
			t.Fatalf("want sigstore/cosign-installer, then cosign sign after the build (installer %d, sign %d, build %d)", i, sign, build)
		}
		stages := dockerfileStages(t)
		for _, svc := range services {
			if target := wf.evaluate(b, svc, b.With["target"]); target != svc || !slices.Contains(stages, target) {
				t.Errorf("%s: --target %q, want the Dockerfile stage %s", svc, target, svc)
			}
			var tags []string
			for _, tag := range strings.FieldsFunc(wf.evaluate(b, svc, b.With["tags"]), func(r rune) bool { return r == ',' || r == '\n' }) {
				if tag = strings.TrimSpace(tag); tag != "" {
					tags = append(tags, tag)
				}
			}
			// the version the chart job gives the chart as appVersion: its default tag
			if want := repos[svc] + ":${{ steps.version.outputs.version }}"; !slices.Equal(tags, []string{want}) {
				t.Errorf("%s: pushes %q, want %q: the chart's default image with the tag's version", svc, tags, want)
			}
			script := wf.evaluate(j.Steps[sign], svc, j.Steps[sign].Run)
			want := fmt.Sprintf("cosign sign --yes %s@${{ steps.%s.outputs.digest }}", repos[svc], b.ID)
			if !strings.Contains(script, want) {
				t.Errorf("%s: the signing step runs %q, want %q (keyless, by digest)", svc, script, want)
			}
		}
	})

	t.Run("chart", func(t *testing.T) {
		var chartJob string
		for name, j := range wf.Jobs {
			if stepIndex(j.Steps, runs("helm push")) >= 0 {
				chartJob = name
			}
		}
		j, ok := wf.Jobs[chartJob]
		if !ok {
			t.Fatal("no job runs helm push")
		}
		if imagesJob == "" || !slices.Contains(j.Needs, imagesJob) {
			t.Errorf("the chart job needs %v: it must wait for the images job (%q), or the chart names images not yet pushed", j.Needs, imagesJob)
		}
		push := stepIndex(j.Steps, runs("helm push"))
		p := j.Steps[push]
		script := wf.evaluate(p, "", p.Run)
		name := eventregChart(t).Metadata.Name
		for _, want := range []string{
			`version=${GITHUB_REF_NAME#v}`,
			"helm package charts/eventreg --version $version --app-version $version",
			"helm push dist/" + name + "-$version.tgz oci://" + registry + "/charts",
			"digest=$digest >> $GITHUB_OUTPUT",
		} {
			if !strings.Contains(script, want) {
				t.Errorf("the push step lacks %q:\n%s", want, script)
			}
		}
		if imgs, ok := wf.Jobs[imagesJob]; ok {
			i := stepIndex(imgs.Steps, runs(`version="${GITHUB_REF_NAME#v}"`))
			if i < 0 || imgs.Steps[i].ID != "version" || !strings.Contains(imgs.Steps[i].Run, `echo "version=$version" >> "$GITHUB_OUTPUT"`) {
				t.Error("the images job's version step (id version) does not take the tag as the chart job does (${GITHUB_REF_NAME#v}): the chart's appVersion would name other images")
			}
		}
		if i := stepIndex(j.Steps, uses("azure/setup-helm")); i < 0 || i > push {
			t.Error("no azure/setup-helm before helm push")
		}
		sign := stepIndex(j.Steps, runs("cosign sign"))
		if i := stepIndex(j.Steps, uses("sigstore/cosign-installer")); i < 0 || sign < push || i > sign {
			t.Fatalf("want sigstore/cosign-installer, then cosign sign after helm push (installer %d, push %d, sign %d)", i, push, sign)
		}
		if i := stepIndex(j.Steps, uses("docker/login-action")); i < 0 || i > sign {
			t.Error("no docker/login-action before cosign signs the chart (cosign reads Docker's credentials)")
		}
		if p.ID == "" {
			t.Fatal("the push step has no id")
		}
		got := wf.evaluate(j.Steps[sign], "", j.Steps[sign].Run)
		want := fmt.Sprintf("cosign sign --yes %s/charts/%s@${{ steps.%s.outputs.digest }}", registry, name, p.ID)
		if !strings.Contains(got, want) {
			t.Errorf("the chart signing step runs %q, want %q", got, want)
		}
	})
}
