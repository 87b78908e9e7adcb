package deploytest

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerInstruction is one instruction of the Dockerfile, continuation lines joined.
type dockerInstruction struct {
	stage string // name of the stage it belongs to
	cmd   string // upper-case instruction
	args  string
}

func readDockerfile(t *testing.T) []dockerInstruction {
	t.Helper()
	var out []dockerInstruction
	stage := ""
	var logical strings.Builder
	for _, line := range strings.Split(readRepoFile(t, "deploy/docker/Dockerfile"), "\n") {
		trimmed := strings.TrimSpace(line)
		if logical.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			logical.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		logical.WriteString(trimmed)
		cmd, args, _ := strings.Cut(logical.String(), " ")
		logical.Reset()
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			if m := regexp.MustCompile(`(?i)\sAS\s+(\S+)$`).FindStringSubmatch(args); m != nil {
				stage = m[1]
			} else {
				stage = ""
			}
		}
		out = append(out, dockerInstruction{stage: stage, cmd: cmd, args: strings.TrimSpace(args)})
	}
	return out
}

func dockerfileStages(t *testing.T) []string {
	var stages []string
	for _, in := range readDockerfile(t) {
		if in.cmd == "FROM" && in.stage != "" {
			stages = append(stages, in.stage)
		}
	}
	return stages
}

func TestDockerfile(t *testing.T) {
	ins := readDockerfile(t)
	stageFrom, _ := dockerfileFroms(ins)
	expand := dockerfileExpander(ins)

	if runtime := expand(stageFrom["runtime"]); !distrolessPinned.MatchString(runtime) {
		t.Errorf("runtime image %q: want gcr.io/distroless/static-debian13:nonroot pinned by digest", runtime)
	}
	if builder := expand(stageFrom["modules"]); !pinned(builder) || !strings.HasPrefix(builder, "golang:") {
		t.Errorf("build image %q: want a pinned golang image", builder)
	}
	for _, svc := range services {
		if stageFrom[svc] != "runtime" {
			t.Errorf("target %s is built FROM %q, want the runtime stage", svc, stageFrom[svc])
		}
		var entry, user string
		for _, in := range ins {
			if in.stage == svc && in.cmd == "ENTRYPOINT" {
				entry = in.args
			}
			if (in.stage == svc || in.stage == "runtime") && in.cmd == "USER" {
				user = in.args
			}
		}
		if entry != `["/usr/local/bin/`+svc+`"]` {
			t.Errorf("target %s: ENTRYPOINT %s, want the exec form of /usr/local/bin/%s (no shell in the image)", svc, entry, svc)
		}
		if !regexp.MustCompile(`^[1-9][0-9]*:[1-9][0-9]*$`).MatchString(user) {
			t.Errorf("target %s: USER %q, want a numeric non-root uid:gid", svc, user)
		}
	}

	// The module download is its own layer: go.mod files copied, `go mod
	// download` run, and only then the sources.
	download, sources := -1, -1
	for i, in := range ins {
		if in.cmd == "RUN" && strings.Contains(in.args, "go mod download") && download < 0 {
			download = i
		}
		if in.cmd == "COPY" && (strings.HasPrefix(in.args, "libs/ ") || strings.HasPrefix(in.args, "services/ ")) && sources < 0 {
			sources = i
		}
		if in.cmd == "COPY" && i < download && !strings.Contains(in.args, "go.mod") {
			t.Errorf("%s %s comes before the module download and is not a go.mod/go.sum copy", in.cmd, in.args)
		}
	}
	if download < 0 || sources < 0 || download > sources {
		t.Errorf("go mod download (instruction %d) must come before the sources are copied (instruction %d)", download, sources)
	}
	var env string
	for _, in := range ins {
		if in.cmd == "ENV" && in.stage == "modules" {
			env += in.args + " "
		}
	}
	for _, want := range []string{"GOWORK=off", "CGO_ENABLED=0"} {
		if !strings.Contains(env, want) {
			t.Errorf("the build stage's ENV %q lacks %s", env, want)
		}
	}
	for _, svc := range services {
		copied := slices.ContainsFunc(ins, func(in dockerInstruction) bool {
			return in.cmd == "COPY" && strings.HasPrefix(in.args, "services/"+svc+"/go.mod ")
		})
		if !copied {
			t.Errorf("services/%s/go.mod is not copied for the module download", svc)
		}
	}
}

var distrolessPinned = regexp.MustCompile(`^gcr\.io/distroless/static-debian13:nonroot@sha256:[0-9a-f]{64}$`)

// dockerfileFroms returns each stage's base (the FROM image or stage, without
// flags) and its --platform flag ("" when none).
func dockerfileFroms(ins []dockerInstruction) (base, platform map[string]string) {
	base, platform = map[string]string{}, map[string]string{}
	for _, in := range ins {
		if in.cmd != "FROM" {
			continue
		}
		for _, f := range strings.Fields(in.args) {
			if p, ok := strings.CutPrefix(f, "--platform="); ok {
				platform[in.stage] = p
				continue
			}
			base[in.stage] = f
			break
		}
	}
	return base, platform
}

// dockerfileExpander expands ${NAME} with the defaults of the global ARGs.
func dockerfileExpander(ins []dockerInstruction) func(string) string {
	args := map[string]string{}
	for _, in := range ins {
		if in.cmd == "ARG" && in.stage == "" {
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = v
		}
	}
	ref := regexp.MustCompile(`\$\{(\w+)\}`)
	return func(s string) string {
		for i := 0; i < 5 && ref.MatchString(s); i++ { // an ARG's default may name another ARG
			s = ref.ReplaceAllStringFunc(s, func(m string) string { return args[m[2:len(m)-1]] })
		}
		return s
	}
}

// TestDockerfileCrossCompiles: a multi-arch build needs no emulation. Every
// stage that runs a command runs on the build platform (FROM
// --platform=$BUILDPLATFORM, directly or through its parent stage), go build
// targets $TARGETOS/$TARGETARCH, and the target-platform stages (runtime and
// the four targets) only copy files.
func TestDockerfileCrossCompiles(t *testing.T) {
	ins := readDockerfile(t)
	base, platform := dockerfileFroms(ins)
	onBuildPlatform := func(stage string) bool {
		for seen := 0; stage != "" && seen < 10; seen++ {
			if platform[stage] == "$BUILDPLATFORM" || platform[stage] == "${BUILDPLATFORM}" {
				return true
			}
			stage = base[stage] // the parent stage, or an image (then not a stage: ends the walk)
			if _, isStage := base[stage]; !isStage {
				return false
			}
		}
		return false
	}
	targetArgs := map[string]map[string]bool{}
	var goBuilds int
	for _, in := range ins {
		if in.cmd == "ARG" && in.stage != "" {
			for _, f := range strings.Fields(in.args) {
				name, _, _ := strings.Cut(f, "=")
				if targetArgs[in.stage] == nil {
					targetArgs[in.stage] = map[string]bool{}
				}
				targetArgs[in.stage][name] = true
			}
		}
		if in.cmd != "RUN" {
			continue
		}
		if !onBuildPlatform(in.stage) {
			t.Errorf("stage %q runs %q on the target platform (emulated in a multi-arch build); build it FROM --platform=$BUILDPLATFORM", in.stage, in.args)
		}
		if strings.Contains(in.args, "go build") {
			goBuilds++
			if !strings.Contains(in.args, "GOOS=$TARGETOS GOARCH=$TARGETARCH go build") {
				t.Errorf("stage %q: go build without GOOS=$TARGETOS GOARCH=$TARGETARCH: %s", in.stage, in.args)
			}
			if !targetArgs[in.stage]["TARGETOS"] || !targetArgs[in.stage]["TARGETARCH"] {
				t.Errorf("stage %q uses $TARGETOS/$TARGETARCH without declaring ARG TARGETOS TARGETARCH", in.stage)
			}
		}
	}
	if goBuilds == 0 {
		t.Error("no RUN with go build found")
	}
	if p := platform["modules"]; p != "$BUILDPLATFORM" {
		t.Errorf("the modules stage has --platform=%q, want $BUILDPLATFORM", p)
	}
	for _, stage := range append([]string{"runtime"}, services...) {
		if onBuildPlatform(stage) {
			t.Errorf("stage %s is on the build platform: the image would have the builder's architecture", stage)
		}
	}
}

// TestServiceModulesBuildWithoutWorkspace checks the Dockerfile's premise: each
// service module builds on its own (GOWORK=off, its go.sum complete, libs through
// its replace directive), with its main package at the module root.
func TestServiceModulesBuildWithoutWorkspace(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	for _, svc := range services {
		t.Run(svc, func(t *testing.T) {
			dir := repoPath(t, "services/"+svc)
			goCmd := func(args ...string) (string, error) {
				cmd := exec.Command(goBin, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					return stderr.String(), err
				}
				return string(out), nil
			}
			if out, err := goCmd("list", "-f", "{{.Name}}", "."); err != nil || strings.TrimSpace(out) != "main" {
				if strings.Contains(out, "no Go files") {
					t.Skipf("services/%s has no main package yet", svc)
				}
				t.Fatalf("services/%s: the module root is not package main (%v): %s", svc, err, out)
			}
			// exactly what the image build compiles: the main package and its imports
			if out, err := goCmd("list", "-deps", "."); err != nil {
				t.Errorf("services/%s does not build with GOWORK=off, as the image build does; run `GOWORK=off go mod tidy` there:\n%s", svc, lastLines(out, 6))
			}
		})
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
