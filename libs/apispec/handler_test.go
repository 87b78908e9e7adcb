package apispec

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

func docsRouter() *gin.Engine {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.GET("/api/docs", Handler())
	r.HEAD("/api/docs", Handler())
	return r
}

func TestHandler(t *testing.T) {
	r := docsRouter()
	v := validator(t)
	cases := []struct {
		name        string
		target      string
		accept      string
		wantStatus  int
		wantType    string
		wantBody    []byte
		ifNoneMatch bool
	}{
		{name: "JSON by default", target: "/api/docs", wantStatus: 200, wantType: ContentTypeJSON, wantBody: JSON()},
		{name: "JSON for a browser", target: "/api/docs", accept: "text/html,application/xhtml+xml,*/*;q=0.8",
			wantStatus: 200, wantType: ContentTypeJSON, wantBody: JSON()},
		{name: "YAML by Accept", target: "/api/docs", accept: "application/yaml", wantStatus: 200, wantType: ContentTypeYAML, wantBody: Document()},
		{name: "YAML by Accept over a wildcard", target: "/api/docs", accept: "application/x-yaml, */*;q=0.1",
			wantStatus: 200, wantType: ContentTypeYAML, wantBody: Document()},
		{name: "JSON preferred to YAML", target: "/api/docs", accept: "application/yaml;q=0.5, application/json",
			wantStatus: 200, wantType: ContentTypeJSON, wantBody: JSON()},
		{name: "YAML by query", target: "/api/docs?format=yaml", wantStatus: 200, wantType: ContentTypeYAML, wantBody: Document()},
		{name: "query over Accept", target: "/api/docs?format=json", accept: "application/yaml", wantStatus: 200, wantType: ContentTypeJSON, wantBody: JSON()},
		{name: "unknown format", target: "/api/docs?format=xml", wantStatus: 400, wantType: "application/json; charset=utf-8"},
		{name: "not modified", target: "/api/docs", ifNoneMatch: true, wantStatus: 304},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.target, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if tc.ifNoneMatch {
				first := httptest.NewRecorder()
				r.ServeHTTP(first, httptest.NewRequest(http.MethodGet, tc.target, nil))
				req.Header.Set("If-None-Match", first.Header().Get("ETag"))
			}
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body.Bytes())
			}
			if got := rec.Header().Get("Content-Type"); tc.wantType != "" && got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
			if tc.wantBody != nil && !bytes.Equal(rec.Body.Bytes(), tc.wantBody) {
				t.Error("the body is not the document in the wanted form")
			}
			if tc.wantStatus == 200 && rec.Header().Get("ETag") == "" {
				t.Error("no ETag")
			}
			if tc.wantStatus == 304 && rec.Body.Len() != 0 {
				t.Errorf("a 304 with a body of %d bytes", rec.Body.Len())
			}
			if err := v.ValidateResponse(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
				t.Errorf("the response breaks the document: %v", err)
			}
		})
	}

	t.Run("HEAD has no body", func(t *testing.T) {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/api/docs", nil))
		if rec.Code != 200 || rec.Header().Get("Content-Type") != ContentTypeJSON {
			t.Errorf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
	})

	t.Run("the two forms have different ETags", func(t *testing.T) {
		a, b := httptest.NewRecorder(), httptest.NewRecorder()
		r.ServeHTTP(a, httptest.NewRequest(http.MethodGet, "/api/docs", nil))
		r.ServeHTTP(b, httptest.NewRequest(http.MethodGet, "/api/docs?format=yaml", nil))
		if a.Header().Get("ETag") == b.Header().Get("ETag") {
			t.Error("JSON and YAML share an ETag")
		}
	})
}

func TestPrefersYAML(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                   false,
		"*/*":                                false,
		"application/json":                   false,
		"application/yaml":                   true,
		"text/yaml":                          true,
		"application/yaml;q=0":               false,
		"application/json;q=0.9, text/yaml":  true,
		"application/json, application/yaml": false,
		"application/*;q=0.2, application/yaml;q=0.3": true,
		"garbage;;;, application/yaml":                true,
	} {
		if got := prefersYAML(accept); got != want {
			t.Errorf("prefersYAML(%q) = %v, want %v", accept, got, want)
		}
	}
}
