package webhookapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventreg/eventreg/services/auth/internal/accesstoken"
	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// refusal is a request the API must refuse, and how.
type refusal struct {
	name, method, path, token string
	body                      []byte
	header                    []string
	status                    int
	category                  string
	// field, when set, must be named in the error's fields.
	field string
}

func TestSubscriptionsAPIRefusals(t *testing.T) {
	s, tok, rc := startManaging(t)
	ctx := context.Background()
	mine := s.Do(t, http.MethodPost, "/api/v0/webhooks", tok, jsonBody(map[string]any{"url": rc.URL, "events": []string{"user-updated"}})).JSON(t)["id"].(string)

	// Another app holding webhook:manage and registration:read only.
	other, secret, err := s.Clients.Create(ctx, client.NewClient{Name: "Other", Kind: client.KindService, Scopes: []string{"webhook:manage", "registration:read"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.App.Webhooks.AllowPrivate(ctx, other.ID, true); err != nil { // its receiver is on 127.0.0.1
		t.Fatal(err)
	}
	otherTok := s.ServiceToken(t, strconv.FormatInt(other.ID, 10), secret)
	theirs := s.Do(t, http.MethodPost, "/api/v0/webhooks", otherTok, jsonBody(map[string]any{"url": rc.URL, "events": []string{"registration-updated"}})).JSON(t)["id"].(string)
	readerTok := s.ServiceToken(t, authtest.ReaderID, authtest.ReaderSecret)
	obo, err := accesstoken.NewIssuer(s.App.Keys, s.URL, "eventreg-api", time.Hour).Issue(accesstoken.UserSubject(authtest.Alice.ID), 503, scope.Set{"webhook:manage"}, "sid-1")
	if err != nil {
		t.Fatal(err)
	}
	expired, err := accesstoken.NewIssuer(s.App.Keys, s.URL, "eventreg-api", -time.Minute).Issue(accesstoken.ClientSubject(501), 501, scope.Set{"webhook:manage"}, "")
	if err != nil {
		t.Fatal(err)
	}
	s.Publish(t, authtest.Event("user-updated", "user:1", `{}`))
	authtest.Eventually(t, 10*time.Second, "a delivery", func() bool { return rc.Count() == 1 })

	good := func(extra map[string]any) []byte {
		m := map[string]any{"url": rc.URL, "events": []string{"user-updated"}}
		for k, v := range extra {
			m[k] = v
		}
		return jsonBody(m)
	}
	const list = "/api/v0/webhooks"
	one := list + "/" + mine
	cases := []refusal{
		{name: "no token", method: "GET", path: list, status: 401, category: "authentication"},
		{name: "a malformed token", method: "GET", path: list, token: "abc.def.ghi", status: 401, category: "authentication"},
		{name: "an expired token", method: "GET", path: list, token: expired.Token, status: 401, category: "authentication"},
		{name: "a token without webhook:manage", method: "GET", path: list, token: readerTok, status: 403, category: "access"},
		{name: "a token acting for a user", method: "GET", path: list, token: obo.Token, status: 403, category: "access"},
		{name: "malformed JSON", method: "POST", path: list, token: tok, body: []byte(`{"url":`), status: 400, category: "validation"},
		{name: "a JSON array", method: "POST", path: list, token: tok, body: []byte(`[]`), status: 400, category: "validation"},
		{name: "an empty body", method: "POST", path: list, token: tok, body: []byte(``), status: 400, category: "validation"},
		{name: "an unknown field", method: "POST", path: list, token: tok, body: good(map[string]any{"secret": "x"}), status: 400, category: "validation", field: "secret"},
		{name: "a duplicate key", method: "POST", path: list, token: tok, body: []byte(`{"url":"` + rc.URL + `","url":"x","events":["user-updated"]}`), status: 400, category: "validation"},
		{name: "url of the wrong type", method: "POST", path: list, token: tok, body: good(map[string]any{"url": 5}), status: 400, category: "validation", field: "url"},
		{name: "url null", method: "POST", path: list, token: tok, body: good(map[string]any{"url": nil}), status: 400, category: "validation", field: "url"},
		{name: "events of the wrong type", method: "POST", path: list, token: tok, body: good(map[string]any{"events": "user-updated"}), status: 400, category: "validation", field: "events"},
		{name: "events holding a number", method: "POST", path: list, token: tok, body: good(map[string]any{"events": []any{1}}), status: 400, category: "validation", field: "events"},
		{name: "no url", method: "POST", path: list, token: tok, body: []byte(`{"events":["user-updated"]}`), status: 400, category: "validation", field: "url"},
		{name: "a relative url", method: "POST", path: list, token: tok, body: good(map[string]any{"url": "/in"}), status: 400, category: "validation", field: "url"},
		{name: "http outside the allowed networks", method: "POST", path: list, token: tok, body: good(map[string]any{"url": "http://93.184.216.34/in"}), status: 400, category: "validation", field: "url"},
		{name: "a private address", method: "POST", path: list, token: tok, body: good(map[string]any{"url": "https://10.1.2.3/in"}), status: 400, category: "validation", field: "url"},
		{name: "user info in the url", method: "POST", path: list, token: tok, body: good(map[string]any{"url": "https://u:p@93.184.216.34/in"}), status: 400, category: "validation", field: "url"},
		{name: "a url too long", method: "POST", path: list, token: tok, body: good(map[string]any{"url": "https://93.184.216.34/" + strings.Repeat("a", 2048)}), status: 400, category: "validation", field: "url"},
		{name: "no events", method: "POST", path: list, token: tok, body: good(map[string]any{"events": []string{}}), status: 400, category: "validation", field: "events"},
		{name: "an unknown event", method: "POST", path: list, token: tok, body: good(map[string]any{"events": []string{"user-created"}}), status: 400, category: "validation", field: "events"},
		{name: "an event twice", method: "POST", path: list, token: tok, body: good(map[string]any{"events": []string{"user-updated", "user-updated"}}), status: 400, category: "validation", field: "events"},
		{name: "a description too long", method: "POST", path: list, token: tok, body: good(map[string]any{"description": strings.Repeat("d", 1001)}), status: 400, category: "validation", field: "description"},
		{name: "a description with a NUL", method: "POST", path: list, token: tok, body: good(map[string]any{"description": "a\x00b"}), status: 400, category: "validation", field: "description"},
		{name: "an event whose scope the app lacks", method: "POST", path: list, token: otherTok, body: good(map[string]any{"events": []string{"volunteer-updated"}}), status: 403, category: "access"},
		{name: "a body too large", method: "POST", path: list, token: tok, body: good(map[string]any{"description": strings.Repeat("d", 70<<10)}), status: 413, category: "validation"},
		{name: "not JSON", method: "POST", path: list, token: tok, body: []byte(`url=x`), header: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 415, category: "validation"},
		{name: "a malformed id", method: "GET", path: list + "/nope", token: tok, status: 404, category: "resource"},
		{name: "an unknown id", method: "GET", path: list + "/3f1c2a52-8a6e-4b43-9a6c-6c3ad8a5f6b0", token: tok, status: 404, category: "resource"},
		{name: "another app's subscription", method: "GET", path: list + "/" + theirs, token: tok, status: 404, category: "resource"},
		{name: "patching another app's", method: "PATCH", path: list + "/" + theirs, token: tok, body: []byte(`{"state":"disabled"}`), status: 404, category: "resource"},
		{name: "deleting another app's", method: "DELETE", path: list + "/" + theirs, token: tok, status: 404, category: "resource"},
		{name: "another app's deliveries", method: "GET", path: list + "/" + theirs + "/deliveries", token: tok, status: 404, category: "resource"},
		{name: "replaying another app's", method: "POST", path: list + "/" + theirs + "/replay", token: tok, status: 404, category: "resource"},
		{name: "an empty patch", method: "PATCH", path: one, token: tok, body: []byte(`{}`), status: 400, category: "validation"},
		{name: "an unknown state", method: "PATCH", path: one, token: tok, body: []byte(`{"state":"paused"}`), status: 400, category: "validation", field: "state"},
		{name: "events null", method: "PATCH", path: one, token: tok, body: []byte(`{"events":null}`), status: 400, category: "validation", field: "events"},
		{name: "a patch with an unknown field", method: "PATCH", path: one, token: tok, body: []byte(`{"enabled":false}`), status: 400, category: "validation", field: "enabled"},
		{name: "a patch with a NUL in the description", method: "PATCH", path: one, token: tok, body: []byte(`{"description":"a\u0000b"}`), status: 400, category: "validation", field: "description"},
		{name: "a patch to a private address", method: "PATCH", path: one, token: tok, body: []byte(`{"url":"https://192.168.1.1/in"}`), status: 400, category: "validation", field: "url"},
		{name: "limit 0", method: "GET", path: one + "/deliveries?limit=0", token: tok, status: 400, category: "validation", field: "limit"},
		{name: "limit not a number", method: "GET", path: one + "/deliveries?limit=ten", token: tok, status: 400, category: "validation", field: "limit"},
		{name: "an unknown delivery state", method: "GET", path: one + "/deliveries?state=lost", token: tok, status: 400, category: "validation", field: "state"},
		{name: "a forged cursor", method: "GET", path: one + "/deliveries?nextPage=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", token: tok, status: 400, category: "validation", field: "nextPage"},
		{name: "a malformed delivery id", method: "POST", path: one + "/deliveries/x/replay", token: tok, status: 404, category: "resource"},
		{name: "an unknown delivery", method: "POST", path: one + "/deliveries/3f1c2a52-8a6e-4b43-9a6c-6c3ad8a5f6b0/replay", token: tok, status: 404, category: "resource"},
	}
	before := s.Do(t, http.MethodGet, list, tok, nil).JSON(t)
	theirsBefore := s.Do(t, http.MethodGet, list, otherTok, nil).JSON(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Do(t, tc.method, tc.path, tc.token, tc.body, tc.header...)
			if got.Status != tc.status {
				t.Fatalf("%d, want %d: %s", got.Status, tc.status, got.Body)
			}
			cat, detail := got.Error(t)
			if cat != tc.category || detail["message"] == "" {
				t.Fatalf("category %q, want %q: %s", cat, tc.category, got.Body)
			}
			if tc.field != "" {
				if fields, _ := detail["fields"].(map[string]any); fields[tc.field] == nil {
					t.Fatalf("the error does not name %s: %s", tc.field, got.Body)
				}
			}
			if tc.status == 401 && !strings.HasPrefix(got.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without a Bearer challenge")
			}
		})
	}
	t.Run("the scope refusal names the scope", func(t *testing.T) {
		got := s.Do(t, http.MethodPost, list, otherTok, good(map[string]any{"events": []string{"volunteer-updated"}}))
		if !bytes.Contains(got.Body, []byte(`"permissions":["volunteer:read"]`)) || !strings.Contains(got.Header.Get("WWW-Authenticate"), `scope="volunteer:read"`) {
			t.Fatalf("%v %s", got.Header, got.Body)
		}
	})
	t.Run("nothing changed", func(t *testing.T) {
		if d := cmp.Diff(before, s.Do(t, http.MethodGet, list, tok, nil).JSON(t)); d != "" {
			t.Fatalf("the app's subscriptions changed (-before +after):\n%s", d)
		}
		if d := cmp.Diff(theirsBefore, s.Do(t, http.MethodGet, list, otherTok, nil).JSON(t)); d != "" {
			t.Fatalf("the other app's subscriptions changed (-before +after):\n%s", d)
		}
	})
	t.Run("a cursor of another filter", func(t *testing.T) {
		s.Publish(t, authtest.Event("user-updated", "user:2", `{}`))
		authtest.Eventually(t, 10*time.Second, "2 deliveries", func() bool { return rc.Count() == 2 })
		page := s.Do(t, http.MethodGet, one+"/deliveries?limit=1", tok, nil).JSON(t)
		next, _ := page["nextPage"].(string)
		if next == "" {
			t.Fatalf("no next page: %v", page)
		}
		if got := s.Do(t, http.MethodGet, one+"/deliveries?limit=1&state=dead&nextPage="+next, tok, nil); got.Status != 400 {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
	t.Run("at most 20 subscriptions per app", func(t *testing.T) {
		for i := 1; i < 20; i++ {
			if got := s.Do(t, http.MethodPost, list, tok, good(nil)); got.Status != 201 {
				t.Fatalf("subscription %d: %d %s", i+1, got.Status, got.Body)
			}
		}
		got := s.Do(t, http.MethodPost, list, tok, good(nil))
		if cat, _ := got.Error(t); got.Status != 400 || cat != "validation" {
			t.Fatalf("the 21st: %d %s", got.Status, got.Body)
		}
		if n := len(s.Do(t, http.MethodGet, list, tok, nil).JSON(t)["data"].([]any)); n != 20 {
			t.Fatal(fmt.Sprint(n, " subscriptions"))
		}
	})
}
