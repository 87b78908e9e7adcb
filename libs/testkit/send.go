package testkit

import (
	"io"
	"net/http"
	"testing"
)

// Send sends req with the default client and returns the response with its
// body read (and closed), failing t when the request or the read fails.
func Send(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
