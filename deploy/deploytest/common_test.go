package deploytest

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (deploy/nginx/compose.conf, testdata/golden/*)")

// services are the five services, in no particular order.
var services = []string{"auth", "users", "volunteers", "registrations", "dealers"}

// repoRoot is the directory holding go.work: two levels above this module.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatalf("finding the repository root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err != nil {
		t.Fatalf("repository root %s has no go.work: %v", dir, err)
	}
	return dir
}

func repoPath(t testing.TB, rel string) string {
	return filepath.Join(repoRoot(t), filepath.FromSlash(rel))
}

func readRepoFile(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(repoPath(t, rel))
	if err != nil {
		t.Fatalf("reading %s: %v", rel, err)
	}
	return string(b)
}

// checkGolden compares got with the file at path, or rewrites it under -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("writing golden %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden %s (run go test -update to create it): %v", path, err)
	}
	if string(want) != got {
		t.Errorf("%s is stale; the first difference is at line %d:\n%s\nrun `go test ./... -update` in deploy/deploytest and review the diff",
			path, firstDiffLine(string(want), got), diffContext(string(want), got))
	}
}

func firstDiffLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

func diffContext(want, got string) string {
	n := firstDiffLine(want, got) - 1
	line := func(s string) string {
		ls := strings.Split(s, "\n")
		if n < len(ls) {
			return ls[n]
		}
		return "<end of file>"
	}
	return "  golden: " + line(want) + "\n  now:    " + line(got)
}

// envDoc is what docs/configuration.md says about environment variables.
type envDoc struct {
	documented map[string]map[string]bool // service -> variable -> documented
	required   map[string]map[string]bool // service -> variable -> required
}

var envRow = regexp.MustCompile("^\\|\\s*`([A-Z][A-Z0-9_]*\\*?)`\\s*\\|([^|]*)\\|")

// readEnvDoc parses the variable tables of docs/configuration.md, section by section.
func readEnvDoc(t testing.TB) envDoc {
	t.Helper()
	doc := envDoc{documented: map[string]map[string]bool{}, required: map[string]map[string]bool{}}
	for _, s := range services {
		doc.documented[s] = map[string]bool{}
		doc.required[s] = map[string]bool{}
	}
	var applies []string
	sc := bufio.NewScanner(strings.NewReader(readRepoFile(t, "docs/configuration.md")))
	rows := 0
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "## "); ok {
			switch {
			case strings.HasPrefix(h, "Variables shared by all services"):
				applies = services
			case strings.HasPrefix(h, "Token validation"):
				applies = []string{"users", "volunteers", "registrations", "dealers"}
			case h == "auth":
				applies = []string{"auth"}
			case h == "users":
				applies = []string{"users"}
			case h == "volunteers, registrations, dealers":
				applies = []string{"volunteers", "registrations", "dealers"}
			default:
				applies = nil
			}
			continue
		}
		m := envRow.FindStringSubmatch(line)
		if m == nil || applies == nil {
			continue
		}
		rows++
		name, def := m[1], m[2]
		for _, s := range applies {
			doc.documented[s][name] = true
			if strings.Contains(def, "(required)") || (strings.Contains(def, "required for `"+s+"`")) {
				doc.required[s][name] = true
			}
		}
	}
	if rows < 10 || len(doc.required["auth"]) == 0 {
		t.Fatalf("docs/configuration.md: found only %d variable rows; has its table format changed?", rows)
	}
	return doc
}

// chartOnlyEnv are variables a deployment sets that configuration.md does not
// list: the Go runtime's GOMEMLIMIT, and the bundled PostgreSQL password that the
// chart splices into DATABASE_URL with $(VAR) expansion.
var chartOnlyEnv = map[string]bool{"GOMEMLIMIT": true, "EVENTREG_POSTGRES_PASSWORD": true}

// checkEnv reports variables a service is given that are not documented for it,
// and documented required variables it lacks.
func (d envDoc) checkEnv(t *testing.T, where, service string, env map[string]bool) {
	t.Helper()
	for name := range env {
		if d.documented[service][name] || chartOnlyEnv[name] || (strings.HasPrefix(name, "OTEL_") && d.documented[service]["OTEL_*"]) {
			continue
		}
		t.Errorf("%s: %s is not a variable of %s in docs/configuration.md", where, name, service)
	}
	for name := range d.required[service] {
		if !env[name] {
			t.Errorf("%s: required variable %s of %s is not set", where, name, service)
		}
	}
}
