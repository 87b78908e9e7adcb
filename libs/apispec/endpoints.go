package apispec

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
)

//go:embed endpoints.json
var endpointsJSON []byte

// Endpoint is one public endpoint of the route table (endpoints.json): the
// owning service and what a request needs.
type Endpoint struct {
	Method  string  `json:"method"`
	Path    string  `json:"path"`
	Service string  `json:"service"`
	Auth    string  `json:"auth"`
	Scope   *string `json:"scope"`
	// SelfScope, when set, also lets an OBO token carrying it call the
	// endpoint for its own user ({id}); its security lists it as a second
	// requirement.
	SelfScope *string `json:"selfScope,omitempty"`
	// ForwardedBy is the service the gateway hands the endpoint to, which
	// forwards it to Service ("" when the gateway routes it to Service).
	ForwardedBy string `json:"forwardedBy,omitempty"`
}

// RouteTable is endpoints.json: the endpoints, the browser pages routed like
// them but outside the API document, and every scope's mode and sensitivity.
type RouteTable struct {
	Endpoints []Endpoint `json:"endpoints"`
	Pages     []Endpoint `json:"pages"`
	Scopes    map[string]struct {
		Mode      string `json:"mode"`
		Sensitive bool   `json:"sensitive"`
	} `json:"scopes"`
}

// Routes returns the project's route table, the one nginx, the chart's
// Ingress and HTTPRoute, this document and the scope and architecture tests
// are checked against. The file is checked by the package's tests, so a
// failure here is a build defect.
var Routes = sync.OnceValue(func() RouteTable {
	var t RouteTable
	if err := json.Unmarshal(endpointsJSON, &t); err != nil || len(t.Endpoints) == 0 {
		panic(fmt.Sprintf("apispec: endpoints.json lists no endpoints or does not parse: %v", err))
	}
	return t
})

// SensitiveScope reports whether name is a sensitive scope of the table: one
// that reaches administrative endpoints or other users' data, which a user
// may grant an app only when holding the permission of the same name. auth's
// scope catalog is checked against this table; users reads it to keep apps
// from granting the roles that carry such permissions (docs/users.md).
func (t RouteTable) SensitiveScope(name string) bool {
	s, ok := t.Scopes[name]
	return ok && s.Sensitive
}
