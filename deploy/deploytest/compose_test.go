package deploytest

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// oneShots run to completion and are waited for with
// service_completed_successfully; docs/deployment.md lists each of them.
func isOneShot(name string) bool {
	return strings.HasPrefix(name, "migrate-") || strings.HasPrefix(name, "import-") || name == "gateway-cert"
}

// withoutHealthcheck are the long-running containers without a health check,
// and why (decision 0017). Nothing may wait for them to be healthy.
var withoutHealthcheck = map[string]string{
	"otel-collector": "image FROM scratch: no shell, no HTTP client, no health subcommand",
	"jaeger":         "traces only; nothing waits for it, and its image's tools are not ours to rely on",
}

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	root := repoRoot(t)
	opts, err := cli.NewProjectOptions([]string{repoPath(t, "docker-compose.yaml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv([]string{}), // the file's own defaults, whatever the caller's environment holds
		cli.WithoutEnvironmentResolution,
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("loading docker-compose.yaml with the compose-spec loader: %v", err)
	}
	return p
}

func TestComposeHealthAndOrder(t *testing.T) {
	p := loadCompose(t)
	for name, s := range p.Services {
		t.Run(name, func(t *testing.T) {
			if s.ReadOnly != true {
				t.Error("read_only is not set")
			}
			switch {
			case isOneShot(name):
				if s.Restart != "no" {
					t.Errorf("one-shot with restart %q", s.Restart)
				}
				if s.HealthCheck != nil && !s.HealthCheck.Disable {
					t.Error("one-shot with a healthcheck")
				}
			case withoutHealthcheck[name] != "":
				if s.HealthCheck != nil {
					t.Errorf("has a healthcheck although listed without one (%s); drop it from withoutHealthcheck", withoutHealthcheck[name])
				}
			default:
				if s.HealthCheck == nil || s.HealthCheck.Disable || len(s.HealthCheck.Test) == 0 {
					t.Error("long-running service without a healthcheck")
				}
			}
			for dep, d := range s.DependsOn {
				target, ok := p.Services[dep]
				if !ok {
					t.Fatalf("depends on unknown service %s", dep)
				}
				switch d.Condition {
				case types.ServiceConditionHealthy:
					if target.HealthCheck == nil {
						t.Errorf("waits for %s to be healthy, which has no healthcheck", dep)
					}
				case types.ServiceConditionCompletedSuccessfully:
					if !isOneShot(dep) {
						t.Errorf("waits for %s to complete, which is not a one-shot", dep)
					}
				case types.ServiceConditionStarted:
					if target.HealthCheck != nil || isOneShot(dep) {
						t.Errorf("waits only for %s to start although it can be waited for properly", dep)
					}
				}
			}
		})
	}

	wantDep := func(svc, dep, cond string) {
		t.Helper()
		s, ok := p.Services[svc]
		if !ok {
			t.Errorf("no service %s", svc)
			return
		}
		if got := s.DependsOn[dep].Condition; got != cond {
			t.Errorf("%s depends on %s with %q, want %s", svc, dep, got, cond)
		}
	}
	for _, svc := range services {
		wantDep("migrate-"+svc, "postgres", types.ServiceConditionHealthy)
		wantDep(svc, "migrate-"+svc, types.ServiceConditionCompletedSuccessfully)
		wantDep(svc, "redis", types.ServiceConditionHealthy)
		wantDep("import-"+svc, "migrate-"+svc, types.ServiceConditionCompletedSuccessfully)
		wantDep("import-"+svc, svc, types.ServiceConditionHealthy)
		wantDep("gateway", svc, types.ServiceConditionHealthy)
		if got := p.Services["import-"+svc].Command; !slices.Equal(got, []string{"import", "/fixtures/demo.json"}) {
			t.Errorf("import-%s runs %v", svc, got)
		}
		if got := p.Services["migrate-"+svc].Command; !slices.Equal(got, []string{"migrate", "up"}) {
			t.Errorf("migrate-%s runs %v", svc, got)
		}
	}
	// the fixture's sections reference users by id: users first, then auth, volunteers, registrations, dealers
	wantDep("import-auth", "import-users", types.ServiceConditionCompletedSuccessfully)
	wantDep("import-volunteers", "import-auth", types.ServiceConditionCompletedSuccessfully)
	wantDep("import-registrations", "import-volunteers", types.ServiceConditionCompletedSuccessfully)
	wantDep("import-dealers", "import-registrations", types.ServiceConditionCompletedSuccessfully)
	wantDep("gateway", "gateway-cert", types.ServiceConditionCompletedSuccessfully)
	wantDep("gateway", "import-dealers", types.ServiceConditionCompletedSuccessfully)
}

// TestComposeServicesCheckThemselves: each service's health check runs its own
// binary's `healthcheck` inside its distroless container: the path is the
// image's ENTRYPOINT, and the binary's command tree has the subcommand.
func TestComposeServicesCheckThemselves(t *testing.T) {
	p := loadCompose(t)
	ins := readDockerfile(t)
	m := regexp.MustCompile(`DefaultHealthcheckTimeout = (\d+) \* time\.Millisecond`).FindStringSubmatch(readRepoFile(t, "libs/service/healthcheck.go"))
	if m == nil {
		t.Fatal("libs/service/healthcheck.go: no DefaultHealthcheckTimeout = N * time.Millisecond")
	}
	ms, _ := strconv.Atoi(m[1])
	ownTimeout := time.Duration(ms) * time.Millisecond
	for _, svc := range services {
		t.Run(svc, func(t *testing.T) {
			s, ok := p.Services[svc]
			if !ok {
				t.Fatalf("no service %s", svc)
			}
			var entry []string
			for _, in := range ins {
				if in.stage == svc && in.cmd == "ENTRYPOINT" {
					if err := json.Unmarshal([]byte(in.args), &entry); err != nil || len(entry) != 1 {
						t.Fatalf("target %s: ENTRYPOINT %s is not one binary in exec form", svc, in.args)
					}
				}
			}
			want := []string{"CMD", "/usr/local/bin/" + svc, "healthcheck"}
			if s.HealthCheck == nil || !slices.Equal(s.HealthCheck.Test, want) {
				var got []string
				if s.HealthCheck != nil {
					got = s.HealthCheck.Test
				}
				t.Errorf("healthcheck %q, want %q", got, want)
			} else if entry == nil || s.HealthCheck.Test[1] != entry[0] {
				t.Errorf("healthcheck runs %s, the image's ENTRYPOINT is %v", s.HealthCheck.Test[1], entry)
			}
			if hc := s.HealthCheck; hc != nil && (hc.Timeout == nil || time.Duration(*hc.Timeout) <= ownTimeout) {
				t.Errorf("healthcheck timeout %v: must exceed the subcommand's own %s, or Docker kills it before it can say why", hc.Timeout, ownTimeout)
			}
			cli := "services/" + svc + "/internal/cli"
			// Root adds it, or builds the command tree with the helper that does.
			if !funcCalls(t, cli, "Root", "HealthcheckCommand") &&
				!(funcCalls(t, cli, "Root", "NewResourceRoot") && funcCalls(t, "libs/service", "NewResourceRoot", "HealthcheckCommand")) {
				t.Errorf("%s: Root does not add service.HealthcheckCommand()", cli)
			}
		})
	}
}

// funcCalls reports whether function name of the Go package in dir calls
// helper of package service (service.<helper>, or <helper> within it).
func funcCalls(t *testing.T, dir, name, helper string) bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), repoPath(t, dir), func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatalf("parsing %s: %v", dir, err)
	}
	found := false
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Name.Name != name || fn.Recv != nil {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					if call, ok := n.(*ast.CallExpr); ok {
						switch fun := call.Fun.(type) {
						case *ast.SelectorExpr:
							id, ok := fun.X.(*ast.Ident)
							found = found || fun.Sel.Name == helper && ok && id.Name == "service"
						case *ast.Ident:
							found = found || fun.Name == helper && pkg.Name == "service"
						}
					}
					return !found
				})
			}
		}
	}
	return found
}

func TestComposeImagesAndBuilds(t *testing.T) {
	p := loadCompose(t)
	stages := dockerfileStages(t)
	// the chart's default repositories (tag cut off): what the release pushes
	chartRepos := map[string]string{}
	r := render(t, "")
	for _, svc := range services {
		img := r.deployment(t, svc).Spec.Template.Spec.Containers[0].Image
		repo, _, _ := strings.Cut(img, "@")
		chartRepos[svc] = strings.TrimSuffix(repo, ":"+eventregChart(t).Metadata.AppVersion)
	}
	ours := map[string]string{} // repository -> service
	for svc, repo := range chartRepos {
		ours[repo] = svc
	}
	builder := map[string]string{} // image -> the build target that makes it
	for _, s := range p.Services {
		if s.Build != nil {
			builder[s.Image] = s.Build.Target
		}
	}
	for name, s := range p.Services {
		repo, _, _ := strings.Cut(s.Image, "@")
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i]
		}
		svc, isOurs := ours[repo]
		if isOurs && builder[s.Image] != svc {
			t.Errorf("%s: image %s is the project's %s image but no service here builds it from this repository: it would be pulled", name, s.Image, svc)
		}
		if isOurs && s.Build == nil {
			continue // its service builds it; migrations and imports run the same image
		}
		if s.Build != nil {
			if s.Build.Dockerfile != "deploy/docker/Dockerfile" || s.Build.Context != repoRoot(t) {
				t.Errorf("%s: builds %s in %s, want deploy/docker/Dockerfile from the repository root", name, s.Build.Dockerfile, s.Build.Context)
			}
			if !slices.Contains(stages, s.Build.Target) || !slices.Contains(services, s.Build.Target) {
				t.Errorf("%s: build target %q is not a service stage of the Dockerfile (%v)", name, s.Build.Target, stages)
			}
			// make images builds that name; the chart's default repository, so
			// `kind load` plus serviceDefaults.image.tag=dev is all a laptop cluster needs
			if want := chartRepos[s.Build.Target] + ":dev"; s.Image != want {
				t.Errorf("%s: image %q, want %q", name, s.Image, want)
			}
			if s.PullPolicy != types.PullPolicyBuild {
				t.Errorf("%s: pull_policy %q, want build: a built image must never be pulled from a registry", name, s.PullPolicy)
			}
			continue
		}
		if !pinned(s.Image) {
			t.Errorf("%s: image %q is not pinned to a version", name, s.Image)
		}
	}
	if !strings.Contains(readRepoFile(t, "Makefile"), "-t "+strings.ReplaceAll(chartRepos["auth"], "auth", "$$s")+":$(IMAGE_TAG)") {
		t.Errorf("make images does not tag the images as the chart names them (%s)", chartRepos["auth"])
	}
}

func TestComposeConfiguration(t *testing.T) {
	p := loadCompose(t)
	env := readEnvDoc(t)
	for name, s := range p.Services {
		svc := strings.TrimPrefix(strings.TrimPrefix(name, "migrate-"), "import-")
		if !slices.Contains(services, svc) {
			continue
		}
		vars := map[string]bool{}
		for k := range s.Environment {
			vars[k] = true
		}
		env.checkEnv(t, "compose "+name, svc, vars)
		dsn, err := url.Parse(deref(s.Environment["DATABASE_URL"]))
		if err != nil || dsn.Host != "postgres:5432" || dsn.Path != "/"+svc || dsn.User.Username() != svc {
			t.Errorf("compose %s: DATABASE_URL %q, want the %s database and role on postgres", name, deref(s.Environment["DATABASE_URL"]), svc)
		}
	}

	sql := readRepoFile(t, "deploy/compose/postgres-databases.sql")
	for _, svc := range services {
		if !strings.Contains(sql, "CREATE DATABASE "+svc+" OWNER "+svc+";") {
			t.Errorf("postgres-databases.sql does not create database %s", svc)
		}
	}

	redis := strings.Join(p.Services["redis"].Command, " ")
	for _, want := range []string{"--appendonly yes", "--maxmemory-policy noeviction"} {
		if !strings.Contains(redis, want) {
			t.Errorf("redis command %q lacks %q", redis, want)
		}
	}

	gw := p.Services["gateway"]
	var mountsConf bool
	for _, v := range gw.Volumes {
		if v.Source == repoPath(t, "deploy/nginx/compose.conf") && v.Target == "/etc/eventreg/nginx.conf" && v.ReadOnly {
			mountsConf = true
		}
	}
	if !mountsConf {
		t.Error("the gateway does not mount deploy/nginx/compose.conf read-only as /etc/eventreg/nginx.conf")
	}
	if !slices.Contains(gw.Tmpfs, composeGateway.Prefix) {
		t.Errorf("the gateway has no tmpfs at its nginx prefix %s: %v", composeGateway.Prefix, gw.Tmpfs)
	}
	for _, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil && !strings.HasSuffix(v.Source, "/deploy/fixtures") {
					t.Errorf("%s mounts %s, which does not exist", s.Name, v.Source)
				}
			}
		}
	}
}

// TestComposePortsAreDocumented: what opens on the host is exactly what
// docs/deployment.md's compose table says, all on the loopback address.
func TestComposePortsAreDocumented(t *testing.T) {
	p := loadCompose(t)
	doc := readRepoFile(t, "docs/deployment.md")
	published := 0
	for name, s := range p.Services {
		for _, port := range s.Ports {
			published++
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %q; publish on 127.0.0.1 only", name, port.Published, port.HostIP)
			}
			if !strings.Contains(doc, "127.0.0.1:"+port.Published) {
				t.Errorf("%s publishes 127.0.0.1:%s, which docs/deployment.md does not mention", name, port.Published)
			}
		}
		if isOneShot(name) && !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("one-shot %s is not described in docs/deployment.md", name)
		}
	}
	if published != 3 {
		t.Errorf("%d host ports published; the gateway's 8080 and 8443 and Jaeger's 16686 are the ones documented", published)
	}
	if gw := p.Services["gateway"]; len(gw.Ports) != 2 {
		t.Errorf("gateway publishes %v", gw.Ports)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
