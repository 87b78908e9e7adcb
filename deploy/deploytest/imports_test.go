package deploytest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// transportFree matches the packages that must know nothing of HTTP, by
// directory: every store (a package named *db) and the business packages,
// which the API packages call and which own the stores' interfaces, and the
// libs they share (the wire shape of errors, user summaries, keysets).
var transportFree = regexp.MustCompile(`^(libs/.*db|services/[a-z]+/internal/(.*db|user|role|volunteer|registration|client|consent|webhook|grant|signin|authorize|logout)|libs/(page/keyset|apierror|usersummary))$`)

// httpImports are what such a package must not import: gin, and the libraries
// of the HTTP layer (page is the HTTP half of pagination; keyset the other).
var httpImports = []string{
	"github.com/gin-gonic/gin",
	"github.com/eventreg/eventreg/libs/apireply",
	"github.com/eventreg/eventreg/libs/apispec",
	"github.com/eventreg/eventreg/libs/httpserver",
	"github.com/eventreg/eventreg/libs/jsonbody",
	"github.com/eventreg/eventreg/libs/page",
	"github.com/eventreg/eventreg/libs/tokenauth",
}

// TestStoresAndBusinessImportNoHTTP: layers go handler → business → store,
// and only the handler speaks HTTP, so stores and business packages import
// neither gin nor the HTTP libraries, directly or through any package of
// this repository (their non-test files).
func TestStoresAndBusinessImportNoHTTP(t *testing.T) {
	root := repoRoot(t)
	checked := map[string]bool{}
	reached := map[string]string{} // import path → its chain to HTTP ("" for none), each package read once
	for _, top := range []string{"libs", "services"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if !transportFree.MatchString(rel) {
				return nil
			}
			imports, files := packageImports(t, path)
			if files == 0 {
				return nil
			}
			checked[rel] = true
			for imp, file := range imports {
				if slices.Contains(httpImports, imp) {
					t.Errorf("%s imports %s: a store or business package speaks no HTTP (move the HTTP part to the API package)", file, imp)
				} else if via := reachesHTTP(t, root, imp, reached); via != "" {
					t.Errorf("%s imports %s, which reaches %s: a store or business package speaks no HTTP", file, imp, via)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Not vacuous: the packages the rule is about are where it looks.
	for _, want := range []string{"services/users/internal/user", "services/users/internal/user/userdb", "services/users/internal/role",
		"services/volunteers/internal/volunteer", "services/registrations/internal/registration", "services/auth/internal/client",
		"services/auth/internal/webhook", "services/auth/internal/grant",
		"services/auth/internal/signin", "services/auth/internal/authorize", "services/auth/internal/logout", "libs/pgdb", "libs/page/keyset", "libs/apierror", "libs/usersummary"} {
		if !checked[want] {
			t.Errorf("%s was not checked: has the tree moved? (checked: %v)", want, slices.Sorted(maps.Keys(checked)))
		}
	}
}

// modulePrefix is the import path of the repository's root.
const modulePrefix = "github.com/eventreg/eventreg/"

// reachesHTTP returns the chain by which the repository package imp reaches
// one of httpImports ("" when it does not, or when imp is not ours),
// remembering every answer in reached.
func reachesHTTP(t *testing.T, root, imp string, reached map[string]string) string {
	t.Helper()
	rel, ours := strings.CutPrefix(imp, modulePrefix)
	if !ours {
		return ""
	}
	if via, ok := reached[imp]; ok {
		return via
	}
	reached[imp] = "" // a cycle cannot be compiled; this only ends the walk
	imports, _ := packageImports(t, filepath.Join(root, filepath.FromSlash(rel)))
	via := ""
	for next := range imports {
		if slices.Contains(httpImports, next) {
			via = rel + " → " + next
		} else if v := reachesHTTP(t, root, next, reached); v != "" {
			via = rel + " → " + v
		}
		if via != "" {
			break
		}
	}
	reached[imp] = via
	return via
}

// packageImports returns the imports of the non-test Go files in dir, each
// with a file that has it, and how many such files there are.
func packageImports(t *testing.T, dir string) (map[string]string, int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]string{}
	files := 0
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		files++
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			imports[imp] = path
		}
	}
	return imports, files
}
