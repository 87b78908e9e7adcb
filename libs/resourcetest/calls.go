package resourcetest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"
)

// jsonHeader is the header of a request with a JSON body (none without one).
func jsonHeader(body string) http.Header {
	if body == "" {
		return nil
	}
	return http.Header{"Content-Type": {"application/json"}}
}

// Call is Do with a JSON body (none when body is empty).
func (e *Env) Call(t testing.TB, method, path, token, body string) Response {
	t.Helper()
	return e.Do(t, method, path, token, jsonHeader(body).Get("Content-Type"), []byte(body))
}

// CallInternal sends a request to the internal listener as a peer service
// holding the deployment's key calls it (Credentials), with a JSON body
// (none when body is empty).
func (e *Env) CallInternal(t testing.TB, method, path, body string) Response {
	t.Helper()
	return e.Send(t, e.Internal, method, path, e.ServiceToken(t), []byte(body), jsonHeader(body))
}

// ServiceToken is a service token for this service from Credentials.
func (e *Env) ServiceToken(t testing.TB) string {
	t.Helper()
	tok, err := e.Credentials.Token(e.service)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Expect fails t unless the response has status.
func (r Response) Expect(t testing.TB, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
}

// ExpectError fails t unless the response is an error of status and
// category with message (any message when message is empty).
func (r Response) ExpectError(t testing.TB, status int, category, message string) {
	t.Helper()
	r.Expect(t, status)
	if cat, msg, _ := r.Error(t); cat != category || (message != "" && msg != message) {
		t.Fatalf("error %s %q, want %s %q", cat, msg, category, message)
	}
}

// ExpectBody fails t unless the body is byte for byte want; it shows what
// differs (-want +got).
func (r Response) ExpectBody(t testing.TB, want string) {
	t.Helper()
	if diff := testkit.BytesDiff([]byte(want), r.Body); diff != "" {
		t.Fatalf("status %d, body (-want +got):\n%s", r.Status, diff)
	}
}

// Error returns the category, message and code of an error body, which must
// hold exactly one error.
func (r Response) Error(t testing.TB) (category, message string, code int) {
	t.Helper()
	var body struct {
		Errors map[string]struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"errors"`
	}
	r.JSON(t, &body)
	if len(body.Errors) != 1 {
		t.Fatalf("not an error body: %s", r.Body)
	}
	for cat, e := range body.Errors {
		return cat, e.Message, e.Code
	}
	return "", "", 0
}

// Map decodes a JSON object body.
func (r Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %s", r.Body)
	}
	return m
}
