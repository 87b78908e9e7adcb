package deploytest

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"regexp"
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
