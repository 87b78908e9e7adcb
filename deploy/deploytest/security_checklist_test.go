package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// proofRef is one reference in the "proved by" column of docs/security.md:
// `dir: TestName/subtest/…` (dir relative to the repository root), or
// `TestName/…` for another test of the cell's previous dir.
var proofRef = regexp.MustCompile("`(?:([a-z0-9_./-]+): )?((?:Test|Fuzz)[A-Za-z0-9_]+)((?:/[^`]+)?)`")

// checklistRow is a table row of docs/security.md with its references.
type checklistRow struct {
	line int
	text string
	refs [][]string // dir, test, "/subtest/…"
}

func checklistRows(t *testing.T, doc string) []checklistRow {
	t.Helper()
	var rows []checklistRow
	for i, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| §") ||
			strings.HasPrefix(line, "| item") || strings.HasPrefix(line, "| source") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		proof := cells[len(cells)-1]
		row := checklistRow{line: i + 1, text: line}
		dir := ""
		for _, m := range proofRef.FindAllStringSubmatch(proof, -1) {
			if m[1] != "" {
				dir = m[1]
			}
			row.refs = append(row.refs, []string{dir, m[2], m[3]})
		}
		rows = append(rows, row)
	}
	return rows
}

// TestSecurityChecklistNamesRealTests: every requirement row of
// docs/security.md names at least one test, and every named test (and
// subtest) exists in the named package, so the checklist cannot point at a
// test that was renamed or removed.
func TestSecurityChecklistNamesRealTests(t *testing.T) {
	doc := readRepoFile(t, "docs/security.md")
	rows := checklistRows(t, doc)
	if len(rows) < 40 {
		t.Fatalf("docs/security.md has %d requirement rows; the checklist is missing", len(rows))
	}
	sources := map[string]string{}
	testsOf := func(dir string) string {
		if src, ok := sources[dir]; ok {
			return src
		}
		files, _ := filepath.Glob(filepath.Join(repoPath(t, dir), "*_test.go"))
		var b strings.Builder
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
		}
		sources[dir] = b.String()
		return sources[dir]
	}
	for _, r := range rows {
		if len(r.refs) == 0 {
			t.Errorf("docs/security.md:%d names no test: %s", r.line, r.text)
			continue
		}
		for _, ref := range r.refs {
			dir, name, sub := ref[0], ref[1], ref[2]
			if dir == "" {
				t.Errorf("docs/security.md:%d: %s has no package dir before it", r.line, name)
				continue
			}
			src := testsOf(dir)
			if src == "" {
				t.Errorf("docs/security.md:%d: %s has no test files", r.line, dir)
				continue
			}
			if !strings.Contains(src, "func "+name+"(") {
				t.Errorf("docs/security.md:%d: %s: no func %s", r.line, dir, name)
			}
			for _, part := range strings.Split(strings.TrimPrefix(sub, "/"), "/") {
				if part != "" && !strings.Contains(src, `"`+part+`"`) {
					t.Errorf("docs/security.md:%d: %s: %s has no subtest %q", r.line, dir, name, part)
				}
			}
		}
	}
}

// TestSecurityChecklistParser: the checker finds references and catches a
// missing test (so the test above cannot pass vacuously).
func TestSecurityChecklistParser(t *testing.T) {
	doc := "| § | requirement | how | proved by |\n|---|---|---|---|\n" +
		"| 2.1 | a | b | `services/auth/internal/server: TestCodeRules/a code expires`, `TestRefreshRules` |\n" +
		"| 2.2 | c | d | nothing |\n"
	rows := checklistRows(t, doc)
	if len(rows) != 2 || len(rows[0].refs) != 2 || rows[0].refs[1][0] != "services/auth/internal/server" ||
		rows[0].refs[0][2] != "/a code expires" || len(rows[1].refs) != 0 {
		t.Fatalf("%+v", rows)
	}
}
