// Package routecheck lists, for the routes a service registers, the places
// of the repository that lack them: the checklist "Adding an endpoint" of
// docs/architecture.md. Each service's TestEndpointChecklist hands Check the
// public routes its production wiring (server.Mount) registered;
// `make endpoint-check` runs those five tests.
//
// The routes checked for a service are those it registers, the endpoints and
// pages of libs/apispec/endpoints.json it owns or forwards, and the rows of
// docs/architecture.md it answers or forwards. Each must be
//   - registered by the service;
//   - in endpoints.json as the service's (its owner's, with the service as
//     forwardedBy when it forwards it): an endpoint, or a page;
//   - in openapi.yaml and in the endpoint table of docs/api.md, unless it
//     is a page;
//   - a row of the endpoint table naming the same owner and forwarder;
//   - routed by the nginx template and by the chart's route table (the
//     Ingress and the HTTPRoute) to the service the gateway hands it to: the
//     forwarder, else the owner.
//
// A route registered on a path the service forwards (users forwards every
// method) counts as far as endpoints.json lists it; a HEAD beside a GET of
// the same path is the GET's; the files gin's Static serves beside the pages
// need only be routed. The gateway's files are read as text, enough to find
// what serves a path; deploy/deploytest renders them and checks them in
// full. That each row's functions exist and call one another is
// libs/testkit/archtable's guarantee, which Check runs too.
package routecheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/libs/testkit/archtable"
)

// Gap is a route and the places that lack it.
type Gap struct {
	Route, Handler string
	Missing        []string
}

func (g Gap) String() string {
	h := ""
	if g.Handler != "" {
		h = " (" + g.Handler + ")"
	}
	return fmt.Sprintf("%s%s is missing from: %s", g.Route, h, strings.Join(g.Missing, "; "))
}

// Gaps returns, for each route of service (registered, listed in
// endpoints.json or in the table), the places that lack it.
func (p *Places) Gaps(service string, registered []gin.RouteInfo) []Gap {
	forwarded := map[string]bool{}
	for k, l := range p.listed {
		if l.ForwardedBy == service {
			forwarded[pathOf(k)] = true
		}
	}
	handlers, names := map[string]string{}, map[string]string{}
	for _, r := range registered {
		handlers[archtable.Key(r.Method, r.Path)] = archtable.HandlerName(r.Handler)
	}
	for _, r := range registered {
		k := archtable.Key(r.Method, r.Path)
		_, get := handlers["GET "+pathOf(k)]
		if !forwarded[pathOf(k)] && !(r.Method == "HEAD" && get) {
			names[k] = r.Method + " " + r.Path
		}
	}
	for k, r := range p.rows {
		if r.Owner == service || r.ForwardedBy == service {
			names[k] = r.Method + " " + r.Path
		}
	}
	for k, l := range p.listed {
		if owner, _ := l.route(); owner == service || l.ForwardedBy == service {
			names[k] = l.Method + " " + l.Path
		}
	}
	var gaps []Gap
	for _, k := range slices.Sorted(maps.Keys(names)) {
		handler, registered := handlers[k]
		if m := p.missing(service, k, registered, handler == staticFiles); len(m) > 0 {
			gaps = append(gaps, Gap{Route: names[k], Handler: handler, Missing: m})
		}
	}
	return gaps
}

// staticFiles is gin's handler of the files of Static and StaticFS.
const staticFiles = "gin.createStaticHandler"

// missing names the places that lack the route k of service; files served
// with the pages (assets) need only the gateway.
func (p *Places) missing(service, k string, registered, assets bool) []string {
	var m []string
	if !registered {
		m = append(m, "the routes "+service+" registers (Register, called by server.Mount)")
	}
	l, listed := p.listed[k]
	owner, gateway := service, service
	switch {
	case assets:
	case !listed:
		m = append(m, endpointsFile+" (endpoints, or pages for a browser page)")
	case l.Service != "gateway" && l.Service != service && l.ForwardedBy != service:
		m = append(m, fmt.Sprintf("%s (it lists it as %s's)", endpointsFile, l.Service))
	default:
		owner, gateway = l.route()
	}
	if !assets && !l.page && !p.document[k] {
		m = append(m, documentFile)
	}
	if !assets && !l.page && !p.apiDoc[k] {
		m = append(m, apiDocFile+" (a row of Endpoints)")
	}
	forwarder := ""
	if gateway != owner {
		forwarder = gateway
	}
	if r, ok := p.rows[k]; !ok && !assets {
		m = append(m, tableFile+" (a row of "+archtable.Section[3:]+")")
	} else if ok && (r.Owner != owner || r.ForwardedBy != forwarder) {
		m = append(m, fmt.Sprintf("%s:%d (the row says %s, forwarded by %q; want %s, forwarded by %q)", tableFile, r.Line, r.Owner, r.ForwardedBy, owner, forwarder))
	}
	uri := strings.ReplaceAll(pathOf(k), "{}", "1001")
	for _, g := range []struct {
		file string
		locs []location
	}{{nginxFile, p.nginx}, {chartFile, p.chart}} {
		got := serve(g.locs, uri)
		if got == "" {
			got = "no route"
		}
		if got != gateway && !(l.Service == "gateway" && strings.HasPrefix(got, "return 2")) {
			m = append(m, fmt.Sprintf("%s (%s goes to %s, want %s)", g.file, uri, got, gateway))
		}
	}
	return m
}

func pathOf(key string) string { _, path, _ := strings.Cut(key, " "); return path }

// Check reports, for the public routes service registered, the places that
// lack one (Gaps) and what is wrong with the service's rows of the endpoint
// table (archtable.Problems).
func Check(t testing.TB, service string, routes []gin.RouteInfo) {
	t.Helper()
	root, err := testkit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range p.Gaps(service, routes) {
		t.Error(g)
	}
	for _, e := range archtable.Problems(root, p.table, service, routes) {
		t.Error(e)
	}
}
