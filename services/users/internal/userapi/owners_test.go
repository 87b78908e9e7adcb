package userapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSubResourcesAreForwardedToTheirOwners: the gateway routes all of
// /api/v0/users to users, which hands the sub-resources other services
// own to their public listeners as they came (decision 0085).
func TestSubResourcesAreForwardedToTheirOwners(t *testing.T) {
	vol, reg := newFakeOwner(t, "volunteers"), newFakeOwner(t, "registrations")
	e := newEnv(t, envOptions{owners: map[string]string{"volunteers": vol.srv.URL, "registrations": reg.srv.URL}})
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	header := http.Header{
		"Traceparent":       {traceparent},
		"X-Request-Id":      {"req-42"},
		"X-Forwarded-For":   {"198.51.100.7"},
		"X-Forwarded-Proto": {"https"},
		"X-Forwarded-Host":  {"api.example.org"},
	}

	for _, o := range []*fakeOwner{vol, reg} {
		path := "/api/v0/users/1001/" + strings.TrimSuffix(o.name, "s")
		t.Run(path+" reaches "+o.name+" as it came", func(t *testing.T) {
			// A token users would refuse: the owner checks it, users does not.
			r := e.Send(t, e.URL, http.MethodGet, path+"?expand=a%20b", "not-a-jwt", nil, header)
			if r.Status != 200 || r.Header.Get("X-Owner") != o.name || string(r.Body) != `{"owner":"`+o.name+`"}` {
				t.Fatalf("%d from %q: %s", r.Status, r.Header.Get("X-Owner"), r.Body)
			}
			got, _ := o.last()
			if got == nil || got.Method != http.MethodGet || got.URL.Path != path || got.URL.RawQuery != "expand=a%20b" {
				t.Fatalf("owner got %v", got)
			}
			for h, want := range map[string]string{"Authorization": "Bearer not-a-jwt", "X-Request-Id": "req-42",
				"X-Forwarded-For": "198.51.100.7", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example.org"} {
				if v := got.Header.Values(h); len(v) != 1 || v[0] != want {
					t.Errorf("owner got %s %q, want %q", h, v, want)
				}
			}
			if tp := got.Header.Get("Traceparent"); !strings.HasPrefix(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
				t.Errorf("owner got traceparent %q: not the caller's trace", tp)
			}
		})
		t.Run("other methods on "+path+" are the owner's to answer", func(t *testing.T) {
			r := e.Send(t, e.URL, http.MethodPost, path, "not-a-jwt", []byte(`{"x":1}`), jsonContent)
			got, body := o.last()
			if r.Status != 405 || r.Header.Get("X-Owner") != o.name || r.Header.Get("Allow") != "GET" ||
				got.Method != http.MethodPost || body != `{"x":1}` {
				t.Fatalf("%d from %q (Allow %q); owner got %s %q", r.Status, r.Header.Get("X-Owner"), r.Header.Get("Allow"), got.Method, body)
			}
		})
	}

	t.Run("/api/v0/users/1001/orders reaches registrations as it came", func(t *testing.T) {
		r := e.Send(t, e.URL, http.MethodGet, "/api/v0/users/1001/orders", "not-a-jwt", nil, header)
		got, _ := reg.last()
		if r.Status != 200 || r.Header.Get("X-Owner") != "registrations" || got == nil || got.URL.Path != "/api/v0/users/1001/orders" ||
			got.Header.Get("Authorization") != "Bearer not-a-jwt" {
			t.Fatalf("%d from %q; owner got %v", r.Status, r.Header.Get("X-Owner"), got)
		}
	})

	t.Run("the rest of /api/v0/users stays with users", func(t *testing.T) {
		before := vol.count() + reg.count()
		e.Call(t, http.MethodGet, "/api/v0/users/1001/roles", e.Tokens.Service(t, "user:read"), "").Expect(t, 200)
		e.Call(t, http.MethodGet, "/api/v0/users/1001", e.Tokens.Service(t, "user:read"), "").Expect(t, 200)
		for _, p := range []string{"/api/v0/users/1001/volunteer/", "/api/v0/users/1001/volunteers", "/api/v0/users/1001/registration/x",
			"/api/v0/users/volunteer", "/api/v0/users/1001/2/registration"} {
			r := e.Send(t, e.URL, http.MethodGet, p, e.Tokens.Service(t, "user:read"), nil, nil)
			if r.Status < 400 || r.Status >= 500 || r.Header.Get("X-Owner") != "" {
				t.Errorf("%s: %d from %q, want users' own 4xx", p, r.Status, r.Header.Get("X-Owner"))
			}
		}
		if n := vol.count() + reg.count() - before; n != 0 {
			t.Errorf("%d of users' own requests reached an owner", n)
		}
	})

	t.Run("an owner that cannot answer is the API's 503", func(t *testing.T) {
		reg.srv.Close()
		start := time.Now()
		r := e.Call(t, http.MethodGet, "/api/v0/users/1001/registration", "not-a-jwt", "")
		r.ExpectError(t, 503, "server", "The registrations service is temporarily unavailable; try again shortly.")
		if took := time.Since(start); took > time.Second || r.Header.Get("Retry-After") != "1" {
			t.Fatalf("took %v, Retry-After %q", took, r.Header.Get("Retry-After"))
		}
		// volunteers is unaffected
		if r := e.Send(t, e.URL, http.MethodGet, "/api/v0/users/1001/volunteer", "not-a-jwt", nil, nil); r.Status != 200 {
			t.Fatalf("volunteers after registrations went away: %d %s", r.Status, r.Body)
		}
	})
}

// TestForwardingOutlastsTheRequestTimeout: the forwarded routes are bound by
// the forwarder's own timeout, not by the server's REQUEST_TIMEOUT, so an
// owner that answers after the latter still answers the client.
func TestForwardingOutlastsTheRequestTimeout(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(600 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"owner":"volunteers"}`)
	}))
	t.Cleanup(slow.Close)
	e := newEnv(t, envOptions{requestTimeout: 200 * time.Millisecond, owners: map[string]string{"volunteers": slow.URL}})
	r := e.Send(t, e.URL, http.MethodGet, "/api/v0/users/1001/volunteer", "not-a-jwt", nil, nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"owner":"volunteers"`) {
		t.Fatalf("got %d %s, want the owner's answer", r.Status, r.Body)
	}
}
