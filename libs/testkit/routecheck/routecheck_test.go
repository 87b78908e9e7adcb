package routecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/testkit/archtable"
)

// edit changes a place: old becomes new, or with drop the line holding old
// goes.
type edit struct {
	file, old, new string
	drop           bool
}

// tree copies the places of this repository into a temporary root, each
// file changed by its edits.
func tree(t *testing.T, edits ...edit) string {
	t.Helper()
	root, err := testkit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{endpointsFile, documentFile, apiDocFile, tableFile, nginxFile, chartFile} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, e := range edits {
			if e.file != f {
				continue
			}
			i := strings.Index(text, e.old)
			if i < 0 {
				t.Fatalf("%s holds no %q", f, e.old)
			}
			if e.drop {
				start, end := strings.LastIndex(text[:i], "\n")+1, i+strings.Index(text[i:], "\n")+1
				text = text[:start] + text[end:]
			} else {
				text = strings.Replace(text, e.old, e.new, 1)
			}
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// registered is what service registers by the endpoint table of this
// repository, named as gin names routes and handlers (users forwards every
// method), and extra.
func registered(t *testing.T, service string, extra ...gin.RouteInfo) []gin.RouteInfo {
	t.Helper()
	root, err := testkit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, tableFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := archtable.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	routes := slices.Clone(extra)
	for _, r := range rows {
		path := param.ReplaceAllString(r.Path, ":$1")
		switch {
		case r.Owner == service:
			pkg, fn, _ := strings.Cut(r.Handler, ".")
			routes = append(routes, route(r.Method, path, pkg, fn))
		case r.ForwardedBy == service:
			for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
				routes = append(routes, gin.RouteInfo{Method: m, Path: path, Handler: "github.com/gin-gonic/gin.WrapH.func1"})
			}
		}
	}
	return routes
}

// route is a route as gin reports it, the handler a method of pkg's Handler.
func route(method, path, pkg, fn string) gin.RouteInfo {
	return gin.RouteInfo{Method: method, Path: path, Handler: "github.com/eventreg/eventreg/x/" + pkg + ".(*Handler)." + fn + "-fm"}
}

// place is the place a gap's entry names.
func place(missing string) string {
	for _, p := range []string{endpointsFile, documentFile, apiDocFile, tableFile, nginxFile, chartFile, "the routes dealers registers"} {
		if strings.HasPrefix(missing, p) {
			return p
		}
	}
	return missing
}

// TestGapsNameThePlace: the places as they are lack nothing; a route missing
// from one place is reported with exactly that place; a new route with the
// places it still lacks.
func TestGapsNameThePlace(t *testing.T) {
	const search = "POST /api/v0/dealers/search"
	of := func(service string, extra ...gin.RouteInfo) func(*testing.T) []gin.RouteInfo {
		return func(t *testing.T) []gin.RouteInfo { return registered(t, service, extra...) }
	}
	static := gin.RouteInfo{Method: "GET", Path: "/oauth/static/*filepath",
		Handler: "github.com/gin-gonic/gin.(*RouterGroup).createStaticHandler.func1"}
	cases := []struct {
		name    string
		edits   []edit
		service string
		routes  func(*testing.T) []gin.RouteInfo
		route   string   // the route of the one gap wanted; "" for none
		want    []string // the places it names, in order
	}{
		{"dealers as it is", nil, "dealers", of("dealers"), "", nil},
		{"users and its forwards as they are", nil, "users", of("users", route("HEAD", "/", "userapi", "rootPage")), "", nil},
		{"volunteers as it is", nil, "volunteers", of("volunteers"), "", nil},
		{"auth, its pages and their files as they are", nil, "auth", of("auth", static), "", nil},
		{"not registered", nil, "dealers", func(*testing.T) []gin.RouteInfo { return nil },
			search, []string{"the routes dealers registers"}},
		{"not in endpoints.json", []edit{{file: endpointsFile, old: `"path": "/api/v0/dealers/search"`, drop: true}},
			"dealers", of("dealers"), search, []string{endpointsFile}},
		{"not in openapi.yaml", []edit{{file: documentFile, old: "/api/v0/dealers/search:\n    post:", new: "/api/v0/dealers/search:\n    x-post:"}},
			"dealers", of("dealers"), search, []string{documentFile}},
		{"not in docs/api.md", []edit{{file: apiDocFile, old: "| POST | `/api/v0/dealers/search` |", drop: true}},
			"dealers", of("dealers"), search, []string{apiDocFile}},
		{"a method of a row of docs/api.md", []edit{{file: apiDocFile, old: "| GET, PATCH, DELETE | `/api/v0/webhooks/{id}` |", new: "| GET, DELETE | `/api/v0/webhooks/{id}` |"}},
			"auth", of("auth", static), "PATCH /api/v0/webhooks/{id}", []string{apiDocFile}},
		{"no row in the table", []edit{{file: tableFile, old: "| POST | `/api/v0/dealers/search` |", drop: true}},
			"dealers", of("dealers"), search, []string{tableFile}},
		{"a row of another service", []edit{{file: tableFile, old: "| POST | `/api/v0/dealers/search` | dealers |", new: "| POST | `/api/v0/dealers/search` | volunteers |"}},
			"dealers", func(*testing.T) []gin.RouteInfo {
				return []gin.RouteInfo{route("POST", "/api/v0/dealers/search", "dealerapi", "search")}
			},
			search, []string{tableFile}},
		{"no nginx location", []edit{{file: nginxFile, old: "location /api/v0/dealers/ {", drop: true}},
			"dealers", of("dealers"), search, []string{nginxFile}},
		{"no chart route", []edit{{file: chartFile, old: `- {path: "/api/v0/dealers/"`, drop: true}},
			"dealers", of("dealers"), search, []string{chartFile}},
		{"a new route under the service's prefix", nil, "dealers", of("dealers", route("POST", "/api/v0/dealers/export", "dealerapi", "export")),
			"POST /api/v0/dealers/export", []string{endpointsFile, documentFile, apiDocFile, tableFile}},
		{"a new route under a new prefix", nil, "dealers", of("dealers", route("GET", "/api/v0/badges/:id", "dealerapi", "badge")),
			"GET /api/v0/badges/:id", []string{endpointsFile, documentFile, apiDocFile, tableFile, nginxFile, chartFile}},
		{"a page no longer listed", []edit{{file: endpointsFile, old: `{"method": "GET", "path": "/oauth/login"`, drop: true}},
			"auth", of("auth", static), "GET /oauth/login", []string{endpointsFile, documentFile, apiDocFile}},
		{"a forwarded endpoint listed as not forwarded",
			[]edit{{file: endpointsFile, old: `"service": "volunteers", "forwardedBy": "users"`, new: `"service": "volunteers"`}},
			"volunteers", of("volunteers"), "GET /api/v0/users/{id}/volunteer", []string{tableFile, nginxFile, chartFile}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Load(tree(t, c.edits...))
			if err != nil {
				t.Fatal(err)
			}
			gaps := p.Gaps(c.service, c.routes(t))
			found := false
			for _, g := range gaps {
				if g.Route != c.route {
					t.Errorf("a gap not wanted: %v", g)
					continue
				}
				found = true
				var named []string
				for _, m := range g.Missing {
					named = append(named, place(m))
				}
				if !slices.Equal(named, c.want) {
					t.Errorf("%v: want the places %q", g, c.want)
				}
			}
			if c.route != "" && !found {
				t.Errorf("no gap for %s, want one naming %q", c.route, c.want)
			}
		})
	}
}

func TestServe(t *testing.T) {
	nginx := nginxLocations("location = / { return 200 'x'; }\nlocation /api/v0/users { proxy_pass http://users; }\n" +
		"location /oauth/ {\n  if ($scheme = http) { return 308 https://x$request_uri; }\n  proxy_pass http://auth;\n}\nlocation / {\n return 404;\n}\n")
	chart := chartRoutes(`- {path: "/", match: Exact, service: users}` + "\n" + `- {path: "/api/v0/users", match: Prefix, service: users}`)
	for _, c := range []struct {
		locs      []location
		uri, want string
	}{
		{nginx, "/", "return 200"},
		{nginx, "/api/v0/users/1001", "users"},
		{nginx, "/api/v0/usersx", "users"}, // nginx matches characters
		{nginx, "/oauth/login", "auth"},    // the proxy, not the redirect
		{nginx, "/api/v0/roles", "return 404"},
		{chart, "/", "users"},
		{chart, "/api/v0/users", "users"},
		{chart, "/api/v0/usersx", ""}, // the chart matches path elements
		{chart, "/x", ""},
	} {
		if got := serve(c.locs, c.uri); got != c.want {
			t.Errorf("%s goes to %q, want %q", c.uri, got, c.want)
		}
	}
}
