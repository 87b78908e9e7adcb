package deploytest

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// wholeValues are values documented as one row: free-form maps and structured
// blocks whose parts are Kubernetes fields.
var wholeValues = map[string]bool{
	"resources": true, "probes": true, "podSecurityContext": true, "securityContext": true,
	"annotations": true, "labels": true, "env": true, "podAnnotations": true, "podLabels": true,
	"nodeSelector": true, "affinity": true,
}

func valuePaths(prefix string, m map[string]any, out *[]string) {
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !wholeValues[k] {
			valuePaths(p, sub, out)
			continue
		}
		*out = append(*out, p)
	}
}

func TestValuesReferenceDocumentsEveryValue(t *testing.T) {
	doc := readRepoFile(t, "docs/deployment.md")
	var paths []string
	valuePaths("", eventregChart(t).Values, &paths)
	sort.Strings(paths)
	for _, p := range paths {
		if !strings.Contains(doc, "`"+p+"`") {
			t.Errorf("values.yaml %s is not in the values reference of docs/deployment.md", p)
		}
	}
}

var (
	basicAuth   = regexp.MustCompile(`-u (\d+):(\S+)`)
	userInPaths = regexp.MustCompile(`/api/v0/users/(\d+)`)
)

// TestDocsCurlExamplesMatchDemoFixture: the compose walkthrough's client id,
// secret and user ids are those of deploy/fixtures/demo.json.
func TestDocsCurlExamplesMatchDemoFixture(t *testing.T) {
	raw, err := os.ReadFile(repoPath(t, "deploy/fixtures/demo.json"))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("deploy/fixtures/demo.json does not exist yet")
	}
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct {
		Users []struct {
			ID int `json:"id"`
		} `json:"users"`
		Clients []struct {
			ID     int      `json:"id"`
			Secret string   `json:"secret"`
			Kind   string   `json:"kind"`
			Scopes []string `json:"scopes"`
		} `json:"clients"`
	}
	if err := json.Unmarshal(raw, &fixture); err != nil {
		t.Fatalf("demo.json: %v", err)
	}
	doc := readRepoFile(t, "docs/deployment.md")
	creds := basicAuth.FindAllStringSubmatch(doc, -1)
	if len(creds) == 0 {
		t.Fatal("docs/deployment.md has no curl -u CLIENT_ID:SECRET example")
	}
	for _, c := range creds {
		found := false
		for _, cl := range fixture.Clients {
			found = found || (strconv.Itoa(cl.ID) == c[1] && cl.Secret == c[2] && cl.Kind == "service")
		}
		if !found {
			t.Errorf("docs/deployment.md uses client %s with secret %s, which is not a service client of demo.json", c[1], c[2])
		}
	}
	for _, m := range userInPaths.FindAllStringSubmatch(doc, -1) {
		found := false
		for _, u := range fixture.Users {
			found = found || strconv.Itoa(u.ID) == m[1]
		}
		if !found {
			t.Errorf("docs/deployment.md asks for user %s, who is not in demo.json", m[1])
		}
	}
}

// schemaValuePaths are the values values.schema.json defines, as the values
// reference lists them: objects with properties are expanded, except
// wholeValues and the per-service overrides (one row each). It also returns
// the properties, expanded or not, that have no description.
func schemaValuePaths(t *testing.T, schema map[string]any) (paths map[string]bool, undescribed []string) {
	t.Helper()
	defs, _ := schema["definitions"].(map[string]any)
	resolve := func(node map[string]any) map[string]any {
		for range 10 {
			ref, ok := node["$ref"].(string)
			if !ok {
				return node
			}
			def, ok := defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
			if !ok {
				t.Fatalf("values.schema.json: unresolvable $ref %s", ref)
			}
			node = def
		}
		return node
	}
	paths = map[string]bool{}
	var walk func(prefix string, node map[string]any)
	walk = func(prefix string, node map[string]any) {
		props, _ := resolve(node)["properties"].(map[string]any)
		for k, v := range props {
			p := strings.TrimPrefix(prefix+"."+k, ".")
			prop, _ := v.(map[string]any)
			if d, _ := prop["description"].(string); strings.TrimSpace(d) == "" {
				if d, _ = resolve(prop)["description"].(string); strings.TrimSpace(d) == "" {
					undescribed = append(undescribed, p)
				}
			}
			if _, nested := resolve(prop)["properties"]; nested && !wholeValues[k] && prefix != "services" {
				walk(p, prop)
				continue
			}
			paths[p] = true
		}
	}
	walk("", schema)
	return paths, undescribed
}

var referenceRow = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")

// valuesReferenceRows are the first cells of the table under "## Values reference".
func valuesReferenceRows(t *testing.T, doc string) []string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Values reference\n")
	if !ok {
		t.Fatal(`docs/deployment.md has no "## Values reference" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if m := referenceRow.FindStringSubmatch(line); m != nil {
			rows = append(rows, m[1])
		}
	}
	return rows
}

// TestValuesReferenceMatchesSchema: every value values.schema.json defines has
// a row in the values reference of docs/deployment.md and a description in the
// schema, and every row names a value the schema defines.
func TestValuesReferenceMatchesSchema(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(eventregChart(t).Schema, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	paths, undescribed := schemaValuePaths(t, schema)
	if len(paths) < 50 {
		t.Fatalf("values.schema.json defines only %d values; has its shape changed?", len(paths))
	}
	sort.Strings(undescribed)
	for _, p := range undescribed {
		t.Errorf("values.schema.json: %s has no description", p)
	}
	rows := valuesReferenceRows(t, readRepoFile(t, "docs/deployment.md"))
	documented := map[string]bool{}
	for _, r := range rows {
		if documented[r] {
			t.Errorf("docs/deployment.md: the values reference has two rows for %s", r)
		}
		documented[r] = true
		if !paths[r] {
			t.Errorf("docs/deployment.md: the values reference documents %s, which values.schema.json does not define", r)
		}
	}
	var missing []string
	for p := range paths {
		if !documented[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("values.schema.json defines %s, which has no row in the values reference of docs/deployment.md", p)
	}
}

// TestValuesReferenceCheckerFindsGaps: the schema walk expands nested objects,
// follows $ref, keeps whole values whole, and reports a missing description.
func TestValuesReferenceCheckerFindsGaps(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal([]byte(`{
	  "definitions": {"res": {"type": "object", "properties": {"limits": {"type": "object", "description": "l"}}}},
	  "properties": {
	    "a": {"type": "object", "description": "a", "properties": {"b": {"type": "string", "description": "b"}, "c": {"type": "integer"}}},
	    "d": {"$ref": "#/definitions/res", "description": "d"},
	    "resources": {"$ref": "#/definitions/res", "description": "r"}
	  }}`), &schema); err != nil {
		t.Fatal(err)
	}
	paths, undescribed := schemaValuePaths(t, schema)
	want := map[string]bool{"a.b": true, "a.c": true, "d.limits": true, "resources": true}
	if !maps.Equal(paths, want) || !slices.Equal(undescribed, []string{"a.c"}) {
		t.Errorf("paths %v, undescribed %v; want %v and [a.c]", paths, undescribed, want)
	}
	rows := valuesReferenceRows(t, "# x\n\n## Values reference\n\n| value | default |\n|---|---|\n| `a.b` | 1 |\n\n## Next\n\n| `z` | 2 |\n")
	if !slices.Equal(rows, []string{"a.b"}) {
		t.Errorf("rows %v, want [a.b] (only the values reference's table)", rows)
	}
}

// TestDecisionIndexListsEveryRecord: docs/decisions/README.md has one row per
// record, linked by its file name, and no row for a record that is not there.
func TestDecisionIndexListsEveryRecord(t *testing.T) {
	dir := repoPath(t, "docs/decisions")
	index, err := os.ReadFile(dir + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	record := regexp.MustCompile(`^\d{4}-.+\.md$`)
	var files []string
	for _, e := range entries {
		if record.MatchString(e.Name()) {
			files = append(files, e.Name())
		}
	}
	var rows []string
	for _, m := range regexp.MustCompile(`(?m)^\| \[(\d{4})\]\((\d{4}-[^)]+\.md)\) \|`).FindAllStringSubmatch(string(index), -1) {
		if !strings.HasPrefix(m[2], m[1]) {
			t.Errorf("row %s links %s", m[1], m[2])
		}
		rows = append(rows, m[2])
	}
	if !slices.Equal(rows, files) {
		t.Errorf("the index lists\n  %v\nthe records are\n  %v", rows, files)
	}
}
