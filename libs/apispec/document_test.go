package apispec

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestDocument(t *testing.T) {
	t.Run("loads and validates as OpenAPI 3.1", func(t *testing.T) {
		doc := loadDoc(t)
		if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
			t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
		}
		if err := doc.Validate(context.Background()); err != nil {
			t.Errorf("Validate: %v", err)
		}
	})

	t.Run("JSON rendering is the same document", func(t *testing.T) {
		js := JSON()
		if !json.Valid(js) {
			t.Fatal("JSON() is not valid JSON")
		}
		loader := openapi3.NewLoader()
		fromJSON, err := loader.LoadFromData(js)
		if err != nil {
			t.Fatalf("loading JSON(): %v", err)
		}
		if err := fromJSON.Validate(context.Background()); err != nil {
			t.Fatalf("validating JSON(): %v", err)
		}
		a, _ := json.Marshal(loadDoc(t))
		b, _ := json.Marshal(fromJSON)
		if string(a) != string(b) {
			t.Error("the document loaded from JSON() differs from the one loaded from the YAML")
		}
	})

	t.Run("callers cannot change the embedded bytes", func(t *testing.T) {
		Document()[0] = 'X'
		JSON()[0] = 'X'
		if Document()[0] == 'X' || JSON()[0] == 'X' {
			t.Error("Document/JSON return the package's own slice")
		}
	})

	t.Run("operation ids are unique", func(t *testing.T) {
		seen := map[string]string{}
		for path, item := range loadDoc(t).Paths.Map() {
			for method, op := range item.Operations() {
				if op.OperationID == "" {
					t.Errorf("%s %s has no operationId", method, path)
				}
				if other, ok := seen[op.OperationID]; ok {
					t.Errorf("operationId %q of %s %s is also %s", op.OperationID, method, path, other)
				}
				seen[op.OperationID] = method + " " + path
			}
		}
	})
}

// security returns the requirements that apply to op.
func security(doc *openapi3.T, op *openapi3.Operation) openapi3.SecurityRequirements {
	if op.Security != nil {
		return *op.Security
	}
	return doc.Security
}

func TestDocumentMatchesEndpointTable(t *testing.T) {
	table := Routes()
	doc := loadDoc(t)

	listed := map[string]bool{}
	for _, e := range table.Endpoints {
		name := e.Method + " " + e.Path
		listed[name] = true
		t.Run(name, func(t *testing.T) {
			item := doc.Paths.Value(e.Path)
			if item == nil {
				t.Fatalf("path %s is not in the document", e.Path)
			}
			op := item.GetOperation(e.Method)
			if op == nil {
				t.Fatalf("%s has no %s operation", e.Path, e.Method)
			}
			reqs := security(doc, op)
			if e.Scope == nil {
				// Callable without a bearer token, and no requirement names a scope.
				if len(reqs) > 0 && !slices.ContainsFunc(reqs, func(r openapi3.SecurityRequirement) bool { return len(r) == 0 }) {
					t.Errorf("security %v: want an empty requirement ({}), the endpoint needs no bearer token", reqs)
				}
				for _, r := range reqs {
					for scheme, scopes := range r {
						if len(scopes) != 0 {
							t.Errorf("security scheme %s names scopes %v, want none", scheme, scopes)
						}
					}
				}
				return
			}
			if len(reqs) == 0 {
				t.Fatalf("no security requirement, want scope %s", *e.Scope)
			}
			var hasOAuth2 bool
			selfSchemes := map[string]bool{}
			for _, r := range reqs {
				if len(r) == 0 {
					t.Errorf("security has an empty requirement: the endpoint would need no token")
				}
				for scheme, scopes := range r {
					selfOnly := e.SelfScope != nil && slices.Equal(scopes, []string{*e.SelfScope})
					if !slices.Equal(scopes, []string{*e.Scope}) && !selfOnly {
						t.Errorf("security scheme %s names scopes %v, want exactly [%s] (or its selfScope alone)", scheme, scopes, *e.Scope)
					}
					if selfOnly {
						selfSchemes[scheme] = true
					}
					if scheme == "oauth2" {
						hasOAuth2 = true
					}
				}
			}
			if !hasOAuth2 {
				t.Errorf("no requirement of the oauth2 scheme")
			}
			if e.SelfScope != nil && !selfSchemes["oauth2"] {
				t.Errorf("no oauth2 requirement of its selfScope %s", *e.SelfScope)
			}
		})
	}

	t.Run("no operation outside the table", func(t *testing.T) {
		for path, item := range doc.Paths.Map() {
			for method := range item.Operations() {
				if !listed[method+" "+path] {
					t.Errorf("%s %s is in the document but not in endpoints.json", method, path)
				}
			}
		}
	})

	t.Run("oauth2 flows declare the scopes", func(t *testing.T) {
		ref := doc.Components.SecuritySchemes["oauth2"]
		if ref == nil || ref.Value == nil || ref.Value.Flows == nil {
			t.Fatal("no oauth2 security scheme with flows")
		}
		flows := ref.Value.Flows
		if flows.AuthorizationCode == nil || flows.ClientCredentials == nil {
			t.Fatal("want the authorizationCode and clientCredentials flows")
		}
		var all, service []string
		for scope, s := range table.Scopes {
			all = append(all, scope)
			if s.Mode == "service" {
				service = append(service, scope)
			}
		}
		slices.Sort(all)
		slices.Sort(service)
		if len(all) == 0 {
			t.Fatal("the table lists no scopes")
		}
		keys := func(m map[string]string) []string {
			var k []string
			for s := range m {
				k = append(k, s)
			}
			slices.Sort(k)
			return k
		}
		if got := keys(flows.AuthorizationCode.Scopes); !slices.Equal(got, all) {
			t.Errorf("authorizationCode scopes = %v, want %v", got, all)
		}
		if got := keys(flows.ClientCredentials.Scopes); !slices.Equal(got, service) {
			t.Errorf("clientCredentials scopes = %v, want the service scopes %v", got, service)
		}
		if ref := doc.Components.SecuritySchemes["bearerAuth"]; ref == nil || ref.Value.Type != "http" || ref.Value.Scheme != "bearer" {
			t.Error("want an http bearer security scheme named bearerAuth")
		}
	})
}

func TestOperationsDocumentErrorStatuses(t *testing.T) {
	doc := loadDoc(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			t.Run(method+" "+path, func(t *testing.T) {
				var want []int
				bearer := slices.ContainsFunc(security(doc, op), func(r openapi3.SecurityRequirement) bool {
					return len(r["oauth2"]) > 0 || len(r["bearerAuth"]) > 0
				})
				oauthAPI := strings.HasPrefix(path, "/api/oauth/")
				switch {
				case bearer:
					want = append(want, 400, 401, 403, 429, 503)
					if strings.Contains(path, "{") {
						want = append(want, 404)
					}
					if op.RequestBody != nil {
						want = append(want, 413)
					}
					if method == http.MethodPut && strings.Contains(path, "/roles/") {
						want = append(want, 204, 409)
					}
					if method == http.MethodDelete {
						want = append(want, 204)
					}
				case oauthAPI:
					want = append(want, 200, 400, 401, 413, 429, 503)
				}
				if method != http.MethodPut && method != http.MethodDelete &&
					!slices.ContainsFunc([]int{200, 201, 202}, func(s int) bool { return op.Responses.Status(s) != nil }) {
					t.Error("no success (200, 201 or 202) response")
				}
				for _, status := range want {
					if op.Responses.Status(status) == nil {
						t.Errorf("no %d response", status)
					}
				}
			})
		}
	}
}
