package routecheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/oasdiff/yaml"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/testkit/archtable"
)

// The places, as the messages name them.
const (
	endpointsFile = "libs/apispec/endpoints.json"
	documentFile  = "libs/apispec/openapi.yaml"
	apiDocFile    = "docs/api.md"
	tableFile     = "docs/architecture.md"
	nginxFile     = "deploy/nginx/nginx.conf.tmpl"
	chartFile     = "charts/eventreg/templates/_routes.tpl"
)

// gatewayBackend serves the gateway's own endpoints (service "gateway" in
// endpoints.json: the root page, the API document) behind it; nginx may
// answer them itself.
const gatewayBackend = "users"

// Places are the places a route must be in, read from one tree.
type Places struct {
	listed   map[string]listing // endpoints.json, by archtable.Key
	document map[string]bool    // the operations of openapi.yaml
	apiDoc   map[string]bool    // the rows of docs/api.md's endpoint table
	rows     map[string]archtable.Row
	table    []byte // docs/architecture.md
	nginx    []location
	chart    []location
}

type listing struct {
	apispec.Endpoint
	page bool
}

// Load reads the places of the tree at root.
func Load(root string) (*Places, error) {
	read := func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(root, filepath.FromSlash(rel))) }
	p := &Places{listed: map[string]listing{}, document: map[string]bool{}, rows: map[string]archtable.Row{}}

	raw, err := read(endpointsFile)
	if err != nil {
		return nil, err
	}
	var t apispec.RouteTable
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", endpointsFile, err)
	}
	for i, e := range append(t.Endpoints, t.Pages...) {
		p.listed[archtable.Key(e.Method, e.Path)] = listing{Endpoint: e, page: i >= len(t.Endpoints)}
	}

	if raw, err = read(documentFile); err != nil {
		return nil, err
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if raw, err = yaml.YAMLToJSON(raw); err != nil || json.Unmarshal(raw, &doc) != nil {
		return nil, fmt.Errorf("%s does not parse: %v", documentFile, err)
	}
	for path, item := range doc.Paths {
		for method := range item {
			p.document[archtable.Key(method, path)] = true // and "PARAMETERS /x": never a route
		}
	}

	if raw, err = read(apiDocFile); err != nil {
		return nil, err
	}
	p.apiDoc = apiDocEndpoints(string(raw))

	if p.table, err = read(tableFile); err != nil {
		return nil, err
	}
	rows, err := archtable.Parse(p.table)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		k := archtable.Key(r.Method, r.Path)
		if other, dup := p.rows[k]; dup {
			return nil, fmt.Errorf("%s:%d: %s %s is also on line %d", tableFile, r.Line, r.Method, r.Path, other.Line)
		}
		p.rows[k] = r
	}

	if raw, err = read(nginxFile); err != nil {
		return nil, err
	}
	p.nginx = nginxLocations(string(raw))
	if raw, err = read(chartFile); err != nil {
		return nil, err
	}
	p.chart = chartRoutes(string(raw))
	if len(p.nginx) == 0 || len(p.chart) == 0 {
		return nil, fmt.Errorf("no routes found in %s or %s: has their format changed?", nginxFile, chartFile)
	}
	return p, nil
}

// route is who answers a listed endpoint and who the gateway hands it to.
func (l listing) route() (owner, gateway string) {
	owner = l.Service
	if owner == "gateway" {
		owner = gatewayBackend
	}
	if l.ForwardedBy != "" {
		return owner, l.ForwardedBy
	}
	return owner, owner
}

var apiRowRE = regexp.MustCompile("^\\|\\s*([A-Z][A-Z, ]*?)\\s*\\|\\s*`([^`]+)`\\s*\\|")

// apiDocEndpoints are the routes of the table under "## Endpoints" of
// docs/api.md, whose rows may name several methods ("GET, PATCH").
func apiDocEndpoints(doc string) map[string]bool {
	out := map[string]bool{}
	_, section, _ := strings.Cut(doc, "\n## Endpoints\n")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, line := range strings.Split(section, "\n") {
		if m := apiRowRE.FindStringSubmatch(line); m != nil {
			for _, method := range strings.Split(m[1], ",") {
				out[archtable.Key(strings.TrimSpace(method), m[2])] = true
			}
		}
	}
	return out
}
