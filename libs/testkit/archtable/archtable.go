// Package archtable keeps the rows of the endpoint table of
// docs/architecture.md ("Where each endpoint lives") true to the source.
//
// A row reads: method | path | service | handler | business | query/store,
// names in backquotes: the handler as gin names it without import path,
// receiver, -fm or closure suffix (`pkg.func`), the others `pkg.Name` or
// `pkg.Type.Method`; "via `pkg.T.m`" names a function through which a
// business function reaches its store indirectly. For each row a service
// answers, Problems guarantees:
//   - a route the service registers for the row has the row's handler (a
//     closure counts as the function that returns it);
//   - every name is declared in the package of that name (looked up under
//     services/<service>, else libs/): `pkg.Name` a function or method so
//     named, `pkg.Type.Method` that method of that type;
//   - the handler, or a function of its package it names, names each
//     business function;
//   - each store is named by a business or via function (or a function of
//     their package they name), or by the handler under a name that no
//     business function of the row has.
//
// Calls are matched by name, without type information: cheap, and enough to
// notice a row that has gone stale. Which routes need a row is
// libs/testkit/routecheck's guarantee.
package archtable

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
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
	Owner, ForwardedBy    string
	Handler               string
	Business, Via, Stores []string
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
			cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
			handler := nameRE.FindAllStringSubmatch(cells[min(3, len(cells)-1)], -1)
			if len(cells) != 6 || len(strings.Fields(cells[2])) == 0 || len(handler) != 1 || handler[0][1] != "" {
				return nil, fmt.Errorf("docs/architecture.md:%d: want 6 cells (method, path, service, handler, business, query), the handler one name in backquotes", i+1)
			}
			r := Row{Line: i + 1, Method: strings.ToUpper(strings.Trim(strings.TrimSpace(cells[0]), "`")),
				Path: strings.Trim(strings.TrimSpace(cells[1]), "`"), Owner: strings.Trim(strings.Fields(cells[2])[0], "`*"),
				Handler: handler[0][2]}
			if m := forwardedRE.FindStringSubmatch(cells[2]); m != nil {
				r.ForwardedBy = m[1]
			}
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
	src := source{root: root, service: service, pkgs: map[string]pkg{}}
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
	pkgs          map[string]pkg
}

// pkg is the non-test functions of one package by name, methods also by
// "Type.Method".
type pkg map[string][]*ast.FuncDecl

func (s source) pkg(name string) (pkg, error) {
	if p, ok := s.pkgs[name]; ok {
		return p, nil
	}
	var dirs []string
	for _, top := range []string{filepath.Join(s.root, "services", s.service), filepath.Join(s.root, "libs")} {
		for stars := ""; len(dirs) == 0 && len(stars) < 10; stars += "/*" {
			found, _ := filepath.Glob(top + stars + "/" + name)
			dirs = append(dirs, found...)
		}
	}
	if len(dirs) != 1 {
		return nil, fmt.Errorf("package %s: %d directories of that name under services/%s, else libs: %v", name, len(dirs), s.service, dirs)
	}
	p := pkg{}
	files, _ := filepath.Glob(filepath.Join(dirs[0], "*.go"))
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(f, "_test.go") || file.Name.Name != name {
			continue
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				p[fn.Name.Name] = append(p[fn.Name.Name], fn)
				if fn.Recv != nil && len(fn.Recv.List) == 1 {
					typ, _, _ := strings.Cut(strings.TrimLeft(types.ExprString(fn.Recv.List[0].Type), "*"), "[")
					p[typ+"."+fn.Name.Name] = append(p[typ+"."+fn.Name.Name], fn)
				}
			}
		}
	}
	s.pkgs[name] = p
	return p, nil
}

// reach adds to used every name used in the body of the function qualified
// names and, transitively, of the functions of its package they name. It
// fails when there is no such function.
func (s source) reach(qualified string, used map[string]bool) error {
	pkgName, name, _ := strings.Cut(qualified, ".")
	p, err := s.pkg(pkgName)
	if err != nil {
		return err
	}
	queue, ok := p[name]
	if !ok {
		return fmt.Errorf("%s does not exist", qualified)
	}
	for done := map[*ast.FuncDecl]bool{}; len(queue) > 0; queue = queue[1:] {
		if d := queue[0]; !done[d] && d.Body != nil {
			done[d] = true
			ast.Inspect(d.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					used[id.Name] = true
					queue = append(queue, p[id.Name]...)
				}
				return true
			})
		}
	}
	return nil
}

// chain checks that the functions of r exist and call one another.
func (s source) chain(r Row) []string {
	byHandler := map[string]bool{}
	if err := s.reach(r.Handler, byHandler); err != nil {
		return []string{err.Error()}
	}
	// A store method counts as called by the handler itself only under a
	// name other than a business function's: h.Users.Get is no userdb.Store.Get.
	onPath := maps.Clone(byHandler)
	for _, b := range r.Business {
		delete(onPath, last(b))
	}
	var errs []string
	for _, b := range slices.Concat(r.Business, r.Via) {
		if err := s.reach(b, onPath); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, b := range r.Business {
		if !byHandler[last(b)] {
			errs = append(errs, fmt.Sprintf("the handler %s (and what it calls in its package) does not call %s", r.Handler, b))
		}
	}
	for _, st := range r.Stores {
		if err := s.reach(st, map[string]bool{}); err != nil {
			errs = append(errs, err.Error())
		} else if !onPath[last(st)] {
			errs = append(errs, fmt.Sprintf("nothing on the path %s → %v (via %v) calls %s", r.Handler, r.Business, r.Via, st))
		}
	}
	return errs
}
