// Package archtable keeps the table "Where each endpoint lives" of
// docs/architecture.md true: each service's test hands Check the public
// routes its production wiring registered.
//
// A row reads: method | path | service | handler | business | query. Names
// are written as gin and Go spell them: the handler `pkg.func` (gin's
// handler name without import path, receiver and -fm), business functions
// and store methods `pkg.Type.Method` or `pkg.Func`. "via `pkg.T.m`" in the
// business cell names a function through which a business function reaches
// its store indirectly (a coalescing loader built in the constructor).
//
// Check verifies, for one service:
//   - every endpoint of libs/apispec/endpoints.json has exactly one row;
//   - every row the service answers is registered with exactly the named
//     handler, and every row it forwards ("users forwards") is registered;
//   - every registered route that is in endpoints.json has a row;
//   - every named function exists; the handler, with what it calls in its
//     own package, names each business function; each store method is
//     named by a business function or a via function (followed through
//     their own package), or by the handler under a name no business
//     function of the row has (a page that calls a store directly).
//
// The calls are matched by name, without type information: cheap, and
// enough to notice a row that has gone stale.
package archtable

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/testkit"
)

// Section is the heading of the table in docs/architecture.md.
const Section = "## Where each endpoint lives"

// Row is one row of the table.
type Row struct {
	Line         int
	Method, Path string
	// Owner answers the endpoint; ForwardedBy is the service that receives
	// it from the gateway and forwards it to Owner ("" when none does).
	Owner, ForwardedBy string
	Handler            string
	Business, Via      []string
	Stores             []string
}

// Check checks the table's rows of service against routes (the public
// routes the service registered) and the source tree.
func Check(t testing.TB, service string, routes []gin.RouteInfo) {
	t.Helper()
	root, err := testkit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Problems(root, doc, service, routes) {
		t.Error(p)
	}
}

// Problems returns what is wrong with the rows of service in doc (the text
// of docs/architecture.md) given its registered routes and the source tree
// at root.
func Problems(root string, doc []byte, service string, routes []gin.RouteInfo) []string {
	rows, err := Parse(doc)
	if err != nil {
		return []string{err.Error()}
	}
	endpoints := loadEndpoints()
	errs := checkEndpoints(rows, endpoints)
	errs = append(errs, checkRoutes(service, rows, routes, endpoints)...)
	src := &source{root: root, service: service, pkgs: map[string]*pkg{}}
	for _, r := range rows {
		if r.Owner != service {
			continue
		}
		for _, e := range src.checkChain(r) {
			errs = append(errs, fmt.Sprintf("docs/architecture.md:%d (%s %s): %s", r.Line, r.Method, r.Path, e))
		}
	}
	return errs
}

var (
	nameRE      = regexp.MustCompile("(via\\s+)?`([^`]+)`")
	forwardedRE = regexp.MustCompile(`\b(\w+) forwards\b`)
	paramRE     = regexp.MustCompile(`\{[^}/]+\}|:[^/]+|\*[^/]+`)
	qualifiedRE = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*){1,2}$`)
	receiverRE  = regexp.MustCompile(`\(\*?\w+\)\.`)
)

// Parse reads the rows of the first table under Section in doc.
func Parse(doc []byte) ([]Row, error) {
	var rows []Row
	in, table := false, 0
	for i, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == Section
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if table > 0 {
				break // the table ended
			}
			continue
		}
		if table++; table <= 2 { // the header and the separator
			continue
		}
		r, err := parseRow(line)
		if err != nil {
			return nil, fmt.Errorf("docs/architecture.md:%d: %w", i+1, err)
		}
		r.Line = i + 1
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("docs/architecture.md: no table under %q", Section)
	}
	return rows, nil
}

func parseRow(line string) (Row, error) {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	if len(cells) != 6 {
		return Row{}, fmt.Errorf("%d cells, want 6 (method, path, service, handler, business, query)", len(cells))
	}
	r := Row{Method: strings.ToUpper(unquote(cells[0])), Path: unquote(cells[1])}
	svc := strings.Fields(cells[2])
	if len(svc) == 0 {
		return Row{}, fmt.Errorf("no service")
	}
	r.Owner = strings.Trim(svc[0], "`*")
	if m := forwardedRE.FindStringSubmatch(cells[2]); m != nil {
		r.ForwardedBy = m[1]
	}
	h := names(cells[3])
	if len(h) != 1 || h[0].via {
		return Row{}, fmt.Errorf("the handler cell must name one function in backquotes")
	}
	r.Handler = h[0].name
	for _, n := range names(cells[4]) {
		if n.via {
			r.Via = append(r.Via, n.name)
		} else {
			r.Business = append(r.Business, n.name)
		}
	}
	for _, n := range names(cells[5]) {
		r.Stores = append(r.Stores, n.name)
	}
	return r, nil
}

func unquote(cell string) string { return strings.Trim(strings.TrimSpace(cell), "`") }

type name struct {
	name string
	via  bool
}

func names(cell string) []name {
	var out []name
	for _, m := range nameRE.FindAllStringSubmatch(cell, -1) {
		if !qualifiedRE.MatchString(m[2]) {
			continue // prose in backquotes: a package, a path
		}
		out = append(out, name{name: m[2], via: m[1] != ""})
	}
	return out
}

// routeKey is a method and a path with every parameter written {}: gin's
// :id and the contract's {userId} are one route.
func routeKey(method, path string) string {
	return method + " " + paramRE.ReplaceAllString(path, "{}")
}

type endpoint = apispec.Endpoint

// loadEndpoints keys the route table's endpoints by routeKey.
func loadEndpoints() map[string]endpoint {
	out := map[string]endpoint{}
	for _, e := range apispec.Routes().Endpoints {
		out[routeKey(e.Method, e.Path)] = e
	}
	return out
}

// checkEndpoints: one row per endpoint of the route table, owned as it says
// (the gateway's endpoints are answered by a service of the table's choice).
func checkEndpoints(rows []Row, endpoints map[string]endpoint) []string {
	var errs []string
	seen := map[string]int{}
	for _, r := range rows {
		k := routeKey(r.Method, r.Path)
		if line, dup := seen[k]; dup {
			errs = append(errs, fmt.Sprintf("docs/architecture.md:%d: %s %s is also on line %d", r.Line, r.Method, r.Path, line))
		}
		seen[k] = r.Line
		if e, ok := endpoints[k]; ok && e.Service != "gateway" && e.Service != r.Owner {
			errs = append(errs, fmt.Sprintf("docs/architecture.md:%d: %s %s is %s's in endpoints.json, not %s's", r.Line, r.Method, r.Path, e.Service, r.Owner))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(endpoints)) {
		if _, ok := seen[k]; !ok {
			errs = append(errs, fmt.Sprintf("docs/architecture.md has no row for %s %s (libs/apispec/endpoints.json)", endpoints[k].Method, endpoints[k].Path))
		}
	}
	return errs
}

// HandlerName is gin's handler name without import path, receiver, -fm and
// closure suffixes: "…/userapi.(*handlers).getUser-fm" is userapi.getUser,
// "…/server.jwks.func1" is server.jwks.
func HandlerName(full string) string {
	s, _ := closure(full)
	return s
}

// closure returns HandlerName's result and whether full names a closure.
func closure(full string) (string, bool) {
	s := full[strings.LastIndex(full, "/")+1:]
	s = strings.TrimSuffix(s, "-fm")
	isClosure := false
	for {
		i := strings.LastIndex(s, ".func")
		if i < 0 || strings.Trim(s[i+len(".func"):], "0123456789.") != "" {
			break
		}
		s, isClosure = s[:i], true
	}
	return receiverRE.ReplaceAllString(s, ""), isClosure
}

// handles tells whether gin's handler name full is the row's handler. A
// closure inlined into its caller is named after the caller's package and
// function ("userapi.Register.Handler" for apispec.Handler's closure): it is
// matched by the name of the function that returns it.
func handles(full, handler string) bool {
	s, isClosure := closure(full)
	return s == handler || isClosure && strings.HasSuffix(s, "."+last(handler))
}

// checkRoutes compares the rows of service with its registered routes.
func checkRoutes(service string, rows []Row, routes []gin.RouteInfo, endpoints map[string]endpoint) []string {
	var errs []string
	registered := map[string]string{}
	for _, r := range routes {
		registered[routeKey(r.Method, r.Path)] = r.Handler
	}
	mine := map[string]bool{}
	for _, r := range rows {
		k := routeKey(r.Method, r.Path)
		switch {
		case r.Owner == service:
			// The owner registers the route as the gateway (or the service
			// that forwards it) hands it over.
			mine[k] = true
			got, ok := registered[k]
			if !ok {
				errs = append(errs, fmt.Sprintf("docs/architecture.md:%d: %s registers no %s %s", r.Line, service, r.Method, r.Path))
			} else if !handles(got, r.Handler) {
				errs = append(errs, fmt.Sprintf("docs/architecture.md:%d: %s %s is handled by %s, not %s", r.Line, r.Method, r.Path, HandlerName(got), r.Handler))
			}
		case r.ForwardedBy == service:
			mine[k] = true
			if _, ok := registered[k]; !ok {
				errs = append(errs, fmt.Sprintf("docs/architecture.md:%d: %s forwards %s %s, but registers no such route", r.Line, service, r.Method, r.Path))
			}
		}
	}
	if len(mine) == 0 {
		errs = append(errs, fmt.Sprintf("docs/architecture.md has no row of %s", service))
	}
	for _, r := range routes {
		k := routeKey(r.Method, r.Path)
		if _, public := endpoints[k]; public && !mine[k] {
			errs = append(errs, fmt.Sprintf("%s registers %s %s (%s), which endpoints.json lists, and no row says so",
				service, r.Method, r.Path, HandlerName(r.Handler)))
		}
	}
	return errs
}

// source finds and parses the packages the rows name: the service's own
// first, then the shared libraries.
type source struct {
	root, service string
	pkgs          map[string]*pkg
}

// pkg is the non-test source of one package.
type pkg struct {
	name  string
	funcs map[string][]*ast.FuncDecl // by name, methods and functions
	// ifaces are the method names of the package's interface types.
	ifaces map[string][]string
}

func (s *source) pkg(name string) (*pkg, error) {
	if p, ok := s.pkgs[name]; ok {
		return p, nil
	}
	var dirs []string
	for _, top := range []string{filepath.Join(s.root, "services", s.service), filepath.Join(s.root, "libs")} {
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") {
				return filepath.SkipDir
			}
			if d.Name() == name {
				dirs = append(dirs, path)
			}
			return nil
		})
		if len(dirs) > 0 {
			break
		}
	}
	switch len(dirs) {
	case 0:
		s.pkgs[name] = nil
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("package %s is ambiguous: %v", name, dirs)
	}
	p := &pkg{name: name, funcs: map[string][]*ast.FuncDecl{}, ifaces: map[string][]string{}}
	files, _ := filepath.Glob(filepath.Join(dirs[0], "*.go"))
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if file.Name.Name != name {
			continue
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				p.funcs[d.Name.Name] = append(p.funcs[d.Name.Name], d)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if it, ok := ts.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								p.ifaces[ts.Name.Name] = append(p.ifaces[ts.Name.Name], n.Name)
							}
						}
					}
				}
			}
		}
	}
	s.pkgs[name] = p
	return p, nil
}

// receiver is the name of the type of d's receiver ("" for a function).
func receiver(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	t := d.Recv.List[0].Type
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// lookup resolves pkg.Func, pkg.func (a handler: any receiver) or
// pkg.Type.Method; p is nil when the package is not in the tree.
func (s *source) lookup(qualified string, anyReceiver bool) (*pkg, []*ast.FuncDecl, error) {
	parts := strings.Split(qualified, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, nil, fmt.Errorf("%s: not pkg.Func or pkg.Type.Method", qualified)
	}
	p, err := s.pkg(parts[0])
	if err != nil || p == nil {
		return nil, nil, err
	}
	fn, typ := parts[len(parts)-1], ""
	if len(parts) == 3 {
		typ = parts[1]
	}
	var out []*ast.FuncDecl
	for _, d := range p.funcs[fn] {
		if (anyReceiver && typ == "") || receiver(d) == typ {
			out = append(out, d)
		}
	}
	if len(out) == 0 && typ != "" && slices.Contains(p.ifaces[typ], fn) {
		return p, nil, nil // an interface's method: nothing to follow
	}
	if len(out) == 0 {
		return p, nil, fmt.Errorf("%s does not exist", qualified)
	}
	return p, out, nil
}

// reach returns every name used in the bodies of start and of the functions
// of p they name, transitively.
func reach(p *pkg, start []*ast.FuncDecl, into map[string]bool) {
	queue := slices.Clone(start)
	done := map[*ast.FuncDecl]bool{}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if done[d] || d.Body == nil {
			continue
		}
		done[d] = true
		ast.Inspect(d.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				into[id.Name] = true
				queue = append(queue, p.funcs[id.Name]...)
			}
			return true
		})
	}
}

func last(qualified string) string { return qualified[strings.LastIndex(qualified, ".")+1:] }

// checkChain checks that the functions of r exist and call one another.
func (s *source) checkChain(r Row) []string {
	var errs []string
	p, decls, err := s.lookup(r.Handler, true)
	if err != nil {
		return []string{err.Error()}
	}
	if p == nil {
		if len(r.Business)+len(r.Via)+len(r.Stores) > 0 {
			errs = append(errs, fmt.Sprintf("the handler %s is not in this tree: its chain cannot be checked", r.Handler))
		}
		return errs
	}
	used := map[string]bool{}
	reach(p, decls, used)
	// A store method counts as called by the handler itself only under a
	// name other than a business function's: h.Users.Get is no userdb.Store.Get.
	path := maps.Clone(used)
	for _, b := range r.Business {
		delete(path, last(b))
	}
	for _, b := range r.Business {
		bp, bdecls, err := s.lookup(b, false)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if bp == nil {
			errs = append(errs, fmt.Sprintf("%s: package not found", b))
			continue
		}
		if !used[last(b)] {
			errs = append(errs, fmt.Sprintf("the handler %s (and what it calls in %s) does not call %s", r.Handler, p.name, b))
		}
		reach(bp, bdecls, path)
	}
	for _, v := range r.Via {
		vp, vdecls, err := s.lookup(v, false)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if vp == nil {
			errs = append(errs, fmt.Sprintf("%s: package not found", v))
			continue
		}
		reach(vp, vdecls, path)
	}
	for _, st := range r.Stores {
		sp, _, err := s.lookup(st, false)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if sp == nil {
			errs = append(errs, fmt.Sprintf("%s: package not found", st))
			continue
		}
		if !path[last(st)] {
			errs = append(errs, fmt.Sprintf("nothing on the path %s → %v (via %v) calls %s", r.Handler, r.Business, r.Via, st))
		}
	}
	return errs
}
