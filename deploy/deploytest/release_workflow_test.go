package deploytest

import (
	"bytes"
	"fmt"
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

// obj is a YAML mapping as yaml.v3 decodes it into any: the workflow is read
// generically, and the test checks the facts that decide what a release
// publishes, not the whole file's shape (decision 0120).
type obj = map[string]any

// field walks path down v (nil where anything is missing); text is the
// scalar there as written, list the sequence (or the one scalar).
func field(v any, path ...string) any {
	for _, k := range path {
		m, _ := v.(obj)
		v = m[k]
	}
	return v
}

func text(v any, path ...string) string {
	if x := field(v, path...); x != nil {
		return fmt.Sprint(x)
	}
	return ""
}

func list(v any, path ...string) []string {
	return strings.Fields(strings.Trim(text(v, path...), "[]"))
}

func steps(j any) (out []obj) {
	ss, _ := field(j, "steps").([]any)
	for _, s := range ss {
		m, _ := s.(obj)
		out = append(out, m)
	}
	return out
}

// job is the job (and its name) with a step whose field key holds substr;
// stepOf is j's first such step (empty when there is none, which no check
// below accepts).
func job(wf obj, key, substr string) (string, obj) {
	for name, j := range wf["jobs"].(obj) {
		if len(stepOf(j.(obj), key, substr)) > 0 {
			return name, j.(obj)
		}
	}
	return "", nil
}

func stepOf(j obj, key, substr string) obj {
	for _, s := range steps(j) {
		if strings.Contains(text(s, key), substr) {
			return s
		}
	}
	return obj{}
}

// evaluate resolves what the test can know of a step's text: ${{ env.X }},
// ${{ matrix.service }} and the shell variables the step's and the
// workflow's env set. Quotes are dropped; anything else stays as written.
func evaluate(wf, st obj, service, s string) string {
	pairs := []string{"${{ matrix.service }}", service, `"`, ""}
	for _, env := range []any{st["env"], wf["env"]} {
		e, _ := env.(obj)
		for k := range e {
			pairs = append(pairs, "${{ env."+k+" }}", text(e, k), "${"+k+"}", text(e, k), "$"+k, text(e, k))
		}
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace(r.Replace(s)) // twice: a step's env may name the workflow's
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
// installed, and a known-bad script proves actionlint runs it), then the
// facts that decide what a release publishes: only a v* tag triggers it,
// with the least permissions, which no job widens, and no step continues on
// error; actions are pinned by commit; each service's image is built from
// its Dockerfile stage for amd64 and arm64, pushed where the chart's
// defaults pull it from with the tag's version, and signed by digest; the
// chart, of that version, is pushed beside them once they are, and signed.
// The order of set-up steps is not checked: a wrong one fails a release
// loudly (decision 0120).
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

	var wf obj
	if err := yaml.Unmarshal([]byte(raw), &wf); err != nil {
		t.Fatalf("%s: %v", releaseWorkflow, err)
	}
	repos, registry := chartDefaults(t)

	t.Run("trigger, permissions, pins", func(t *testing.T) {
		// fmt prints maps sorted: these are the whole values
		for _, c := range []struct{ what, got, want string }{
			{"on", fmt.Sprint(wf["on"]), "map[push:map[tags:[v*]]]"},
			{"permissions", fmt.Sprint(wf["permissions"]), "map[contents:read id-token:write packages:write]"},
			// GitHub runs bash with -o pipefail: the chart job pipes helm push into tee
			{"defaults.run.shell", text(wf, "defaults", "run", "shell"), "bash"},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s, want %s", c.what, c.got, c.want)
			}
		}
		for name, j := range wf["jobs"].(obj) {
			if field(j, "permissions") != nil || field(j, "continue-on-error") != nil ||
				slices.ContainsFunc(steps(j), func(s obj) bool { return s["continue-on-error"] != nil }) {
				t.Errorf("job %s sets permissions or continue-on-error: no job may widen the workflow's, nor pass a failed step", name)
			}
		}
		pinned := regexp.MustCompile(`^\s*-?\s*uses:\s*[\w.-]+/[\w./-]+@[0-9a-f]{40}\s+#\s*v\d+(\.\d+)*\s*$`)
		lines := regexp.MustCompile(`(?m)^\s*-?\s*uses:.*$`).FindAllString(raw, -1)
		for _, line := range lines {
			if !pinned.MatchString(line) {
				t.Errorf("%q: pin actions by full commit SHA with a `# vX.Y.Z` comment", strings.TrimSpace(line))
			}
		}
		if len(lines) == 0 {
			t.Error("no uses: lines found")
		}
	})

	imagesJob, images := job(wf, "uses", "docker/build-push-action@")
	t.Run("images", func(t *testing.T) {
		if got := slices.Sorted(slices.Values(list(images, "strategy", "matrix", "service"))); !slices.Equal(got, slices.Sorted(slices.Values(services))) {
			t.Errorf("the build job's matrix.service %v, want the services %v", got, services)
		}
		b, sign := stepOf(images, "uses", "docker/build-push-action@"), stepOf(images, "run", "cosign sign")
		with := func(k string) string { return text(b, "with", k) }
		if got, want := strings.Join([]string{with("context"), with("file"), with("platforms"), with("push")}, " "),
			". deploy/docker/Dockerfile linux/amd64,linux/arm64 true"; got != want || text(b, "id") == "" {
			t.Errorf("the build step (id %q) builds and pushes %q, want %q and an id, whose digest is signed", text(b, "id"), got, want)
		}
		stages := dockerfileStages(t)
		for _, svc := range services {
			// the tag's version is the chart's appVersion: its default tag
			got := evaluate(wf, b, svc, with("target")) + " " + strings.TrimSpace(evaluate(wf, b, svc, with("tags")))
			if want := svc + " " + repos[svc] + ":${{ steps.version.outputs.version }}"; got != want || !slices.Contains(stages, svc) {
				t.Errorf("%s: builds and pushes %q, want %q: its Dockerfile stage, as the chart's default image, at the tag's version", svc, got, want)
			}
			script := evaluate(wf, sign, svc, text(sign, "run"))
			if want := fmt.Sprintf("cosign sign --yes %s@${{ steps.%s.outputs.digest }}", repos[svc], text(b, "id")); !strings.Contains(script, want) {
				t.Errorf("%s: the signing step runs %q, want %q (keyless, by digest)", svc, script, want)
			}
		}
		if v := stepOf(images, "run", `version="${GITHUB_REF_NAME#v}"`); text(v, "id") != "version" ||
			!strings.Contains(text(v, "run"), `echo "version=$version" >> "$GITHUB_OUTPUT"`) {
			t.Error("the images job's version step (id version) does not take the tag as the chart job does (${GITHUB_REF_NAME#v}): the chart's appVersion would name other images")
		}
	})

	t.Run("chart", func(t *testing.T) {
		_, chart := job(wf, "run", "helm push")
		if imagesJob == "" || !slices.Contains(list(chart, "needs"), imagesJob) {
			t.Errorf("the chart job needs %v: it must wait for the images job (%q), or the chart names images not yet pushed", list(chart, "needs"), imagesJob)
		}
		push, sign := stepOf(chart, "run", "helm push"), stepOf(chart, "run", "cosign sign")
		script, name := evaluate(wf, push, "", text(push, "run")), eventregChart(t).Metadata.Name
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
		got := evaluate(wf, sign, "", text(sign, "run"))
		if want := fmt.Sprintf("cosign sign --yes %s/charts/%s@${{ steps.%s.outputs.digest }}", registry, name, text(push, "id")); !strings.Contains(got, want) || text(push, "id") == "" {
			t.Errorf("the chart signing step runs %q, want %q", got, want)
		}
	})
}
