package authtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/eventreg/eventreg/libs/apispec"
	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/testkit"
)

// Response is what a request to the public listener got.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as an object, failing t when it is not one.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("not a JSON object: %s", r.Body)
	}
	return m
}

// Error returns the category and the detail of an error body.
func (r Response) Error(t testing.TB) (string, map[string]any) {
	t.Helper()
	errs, _ := r.JSON(t)["errors"].(map[string]any)
	for category, d := range errs {
		detail, _ := d.(map[string]any)
		return category, detail
	}
	t.Fatalf("no error in %s", r.Body)
	return "", nil
}

var (
	specOnce sync.Once
	spec     *apispec.Validator
	specErr  error
)

// Do sends a request to the public listener (with a bearer token when not
// "", a JSON body when not nil, and header's name and value pairs) and
// checks the response against the API document.
func (s *Server) Do(t testing.TB, method, path, bearer string, body []byte, header ...string) Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, b := testkit.Send(t, req)
	specOnce.Do(func() { spec, specErr = apispec.NewValidator() })
	if specErr != nil {
		t.Fatal(specErr)
	}
	if err := spec.ValidateResponse(req, resp.StatusCode, resp.Header, b); err != nil {
		t.Errorf("the answer does not match the OpenAPI document: %v\nbody: %s", err, b)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// ServiceToken returns an access token of client id got with the
// client_credentials grant for scopes.
func (s *Server) ServiceToken(t testing.TB, id, secret string, scopes ...string) string {
	t.Helper()
	cfg := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: s.URL + "/api/oauth/token", Scopes: scopes}
	tok, err := cfg.Token(context.Background())
	if err != nil {
		t.Fatalf("token of %s: %v", id, err)
	}
	return tok.AccessToken
}

// Publish sends events to the internal event intake as a producer's relay
// does, and returns how many were new.
func (s *Server) Publish(t testing.TB, events ...authapi.Event) int {
	t.Helper()
	n, err := authapi.NewClient(s.InternalURL, 5*time.Second, s.Peer).PublishEvents(context.Background(), events)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
