// Package archtable keeps the rows of the endpoint table of
// docs/architecture.md ("Where each endpoint lives") true to the source.
//
// A row reads: method | path | service | handler | business | query/store.
// Names in backquotes are spelled as gin and Go spell them: the handler
// `pkg.func` (gin's handler name without import path, receiver, -fm or
// closure suffix), business functions and stores `pkg.Func` or
// `pkg.Type.Method`; "via `pkg.T.m`" in the business cell names a function
// through which a business function reaches its store indirectly.
//
// For each row a service answers, Problems guarantees:
//   - if the service registers the row's route, it does so with exactly the
//     named handler (a closure counts as the function that returns it);
//   - every named function exists, in the service's packages or in libs/
//     (a package is looked up by its directory's name, the service first);
//     a method declared only by an interface counts;
//   - the handler, or a function of its own package it reaches, uses the
//     name of each business function;
//   - the name of each store is used by a business or via function (or a
//     function of their package they reach), or by the handler under a name
//     that is no business function's of the row.
//
// Calls are matched by name, without type information: cheap, and enough to
// notice a row that has gone stale. Which routes must have a row at all is
// libs/testkit/routecheck's guarantee.
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
	"strings"

	"github.com/gin-gonic/gin"
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

var (
	nameRE      = regexp.MustCompile("(via\\s+)?`([A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*){1,2})`")
	forwardedRE = regexp.MustCompile(`\b(\w+) forwards\b`)
	paramRE     = regexp.MustCompile(`\{[^}/]+\}|:[^/]+|\*[^/]+`)
	receiverRE  = regexp.MustCompile(`\(\*?\w+\)\.`)
	closureRE   = regexp.MustCompile(`(\.func\d+(\.\d+)*)+$`)
)

// Key is a route with every parameter written {}: gin's :id and the
// contract's {userId} are one route.
func Key(method, path string) string {
	return strings.ToUpper(method) + " " + paramRE.ReplaceAllString(path, "{}")
}

// Parse reads the rows of the first table under Section in doc.
func Parse(doc []byte) ([]Row, error) {
	var rows []Row
	in, seen := false, 0
	for i, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == Section
		} else if in && strings.HasPrefix(line, "|") {
			if seen++; seen <= 2 { // the header and the separator
				continue
			}
			r, err := parseRow(line)
			if err != nil {
				return nil, fmt.Errorf("docs/architecture.md:%d: %w", i+1, err)
			}
			r.Line = i + 1
			rows = append(rows, r)
		} else if in && seen > 0 {
			break // the table ended
		}
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
	svc := strings.Fields(cells[2])
	if len(svc) == 0 {
		return Row{}, fmt.Errorf("no service")
	}
	r := Row{Method: strings.ToUpper(strings.Trim(strings.TrimSpace(cells[0]), "`")),
		Path: strings.Trim(strings.TrimSpace(cells[1]), "`"), Owner: strings.Trim(svc[0], "`*")}
	if m := forwardedRE.FindStringSubmatch(cells[2]); m != nil {
		r.ForwardedBy = m[1]
	}
	h := nameRE.FindAllStringSubmatch(cells[3], -1)
	if len(h) != 1 || h[0][1] != "" {
		return Row{}, fmt.Errorf("the handler cell must name one function in backquotes")
	}
	r.Handler = h[0][2]
	for _, m := range nameRE.FindAllStringSubmatch(cells[4], -1) {
		if m[1] != "" {
			r.Via = append(r.Via, m[2])
		} else {
			r.Business = append(r.Business, m[2])
		}
	}
	for _, m := range nameRE.FindAllStringSubmatch(cells[5], -1) {
		r.Stores = append(r.Stores, m[2])
	}
	return r, nil
}

// HandlerName is gin's handler name without import path, receiver, -fm and
// closure suffixes: "…/userapi.(*handlers).getUser-fm" is userapi.getUser,
// "…/server.jwks.func1" is server.jwks.
func HandlerName(full string) string {
	s := strings.TrimSuffix(full[strings.LastIndex(full, "/")+1:], "-fm")
	return receiverRE.ReplaceAllString(closureRE.ReplaceAllString(s, ""), "")
}

// handles tells whether gin's handler name full is the row's handler. A
// closure inlined into its caller is named after the caller
// ("userapi.Register.Handler.func1" for apispec.Handler's closure): it is
// matched by the name of the function that returns it.
func handles(full, handler string) bool {
	s := HandlerName(full)
	return s == handler || closureRE.MatchString(strings.TrimSuffix(full, "-fm")) && strings.HasSuffix(s, "."+last(handler))
}

func last(qualified string) string { return qualified[strings.LastIndex(qualified, ".")+1:] }

// Problems returns what is wrong with the rows of service in doc (the text
// of docs/architecture.md) given its registered routes and the source tree
// at root.
func Problems(root string, doc []byte, service string, routes []gin.RouteInfo) []string {
	rows, err := Parse(doc)
	if err != nil {
		return []string{err.Error()}
	}
	registered := map[string]string{}
	for _, r := range routes {
		registered[Key(r.Method, r.Path)] = r.Handler
	}
	src := &source{root: root, service: service, pkgs: map[string]*pkg{}}
	var errs []string
	for _, r := range rows {
		if r.Owner != service {
			continue
		}
		at := fmt.Sprintf("docs/architecture.md:%d (%s %s): ", r.Line, r.Method, r.Path)
		if got, ok := registered[Key(r.Method, r.Path)]; ok && !handles(got, r.Handler) {
			errs = append(errs, at+fmt.Sprintf("handled by %s, not %s", HandlerName(got), r.Handler))
		}
		for _, e := range src.chain(r) {
			errs = append(errs, at+e)
		}
	}
	return errs
}

// source finds and parses the packages the rows name.
type source struct {
	root, service string
	pkgs          map[string]*pkg
}

// pkg is the non-test source of one package: its functions by name (for
// following calls) and by qualified name ("Func", "Type.Method", an
// interface's "Type.Method" with no declaration).
type pkg struct {
	byName map[string][]*ast.FuncDecl
	byQual map[string][]*ast.FuncDecl
}

// pkg finds the directory called name under the service, else under libs/.
func (s *source) pkg(name string) (*pkg, error) {
	if p, ok := s.pkgs[name]; ok {
		return p, nil
	}
	var dirs []string
	for _, top := range []string{filepath.Join(s.root, "services", s.service), filepath.Join(s.root, "libs")} {
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if err == nil && d.IsDir() && d.Name() == name {
				dirs = append(dirs, path)
			}
			return err
		})
		if len(dirs) > 0 {
			break
		}
	}
	if len(dirs) > 1 {
		return nil, fmt.Errorf("package %s is ambiguous: %v", name, dirs)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("package %s is not in services/%s or libs", name, s.service)
	}
	p := &pkg{byName: map[string][]*ast.FuncDecl{}, byQual: map[string][]*ast.FuncDecl{}}
	files, _ := filepath.Glob(filepath.Join(dirs[0], "*.go"))
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(f, "_test.go") || file.Name.Name != name {
			continue
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				p.byName[n.Name.Name] = append(p.byName[n.Name.Name], n)
				p.byQual[receiver(n)+n.Name.Name] = append(p.byQual[receiver(n)+n.Name.Name], n)
			case *ast.TypeSpec:
				if it, ok := n.Type.(*ast.InterfaceType); ok {
					for _, m := range it.Methods.List {
						for _, id := range m.Names {
							p.byQual[n.Name.Name+"."+id.Name] = append(p.byQual[n.Name.Name+"."+id.Name], nil...)
						}
					}
				}
			}
			return true
		})
	}
	s.pkgs[name] = p
	return p, nil
}

// receiver is "Type." for a method, "" for a function.
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
		return id.Name + "."
	}
	return ""
}

// reach adds to used every name used in the bodies of the function
// qualified names (a handler's `pkg.func`: of any receiver) and,
// transitively, of the functions of its package they name. It fails when
// there is no such function.
func (s *source) reach(qualified string, handler bool, used map[string]bool) error {
	pkgName, rest, _ := strings.Cut(qualified, ".")
	p, err := s.pkg(pkgName)
	if err != nil {
		return err
	}
	queue, ok := p.byQual[rest]
	if handler && !strings.Contains(rest, ".") {
		queue, ok = p.byName[rest], len(p.byName[rest]) > 0
	}
	if !ok {
		return fmt.Errorf("%s does not exist", qualified)
	}
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
				used[id.Name] = true
				queue = append(queue, p.byName[id.Name]...)
			}
			return true
		})
	}
	return nil
}

// chain checks that the functions of r exist and call one another.
func (s *source) chain(r Row) []string {
	byHandler := map[string]bool{}
	if err := s.reach(r.Handler, true, byHandler); err != nil {
		return []string{err.Error()}
	}
	// A store method counts as called by the handler itself only under a
	// name other than a business function's: h.Users.Get is no userdb.Store.Get.
	onPath := maps.Clone(byHandler)
	for _, b := range r.Business {
		delete(onPath, last(b))
	}
	var errs []string
	for _, b := range append(r.Business, r.Via...) {
		if err := s.reach(b, false, onPath); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, b := range r.Business {
		if !byHandler[last(b)] {
			errs = append(errs, fmt.Sprintf("the handler %s (and what it calls in its package) does not call %s", r.Handler, b))
		}
	}
	for _, st := range r.Stores {
		if err := s.reach(st, false, map[string]bool{}); err != nil {
			errs = append(errs, err.Error())
		} else if !onPath[last(st)] {
			errs = append(errs, fmt.Sprintf("nothing on the path %s → %v (via %v) calls %s", r.Handler, r.Business, r.Via, st))
		}
	}
	return errs
}
