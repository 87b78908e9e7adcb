package webhookapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	jwt "github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

func TestConCatFormat(t *testing.T) {
	s, tok, rc := startManaging(t)
	url := rc.URL + "/concat?app=1"

	key := s.Do(t, http.MethodGet, "/api/webhooks/key", "", nil)
	t.Run("GET /api/webhooks/key serves one PEM public key, no token needed", func(t *testing.T) {
		if key.Status != 200 || !bytes.HasPrefix(key.Body, []byte("-----BEGIN PUBLIC KEY-----\n")) ||
			bytes.Count(key.Body, []byte("-----BEGIN")) != 1 || !strings.HasPrefix(key.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("%d %v %s", key.Status, key.Header, key.Body)
		}
	})

	created := s.Do(t, http.MethodPost, "/api/v0/webhooks", tok, jsonBody(map[string]any{
		"url": url, "events": []string{"user-updated"}, "format": "concat"}))
	sub := created.JSON(t)
	if created.Status != 201 || sub["format"] != "concat" {
		t.Fatalf("%d %s", created.Status, created.Body)
	}
	path := "/api/v0/webhooks/" + sub["id"].(string)
	req, raw := delivery(t, s, rc, authtest.Event(authapi.EventUserUpdated, "user:1001", `{"id": "1001", "preferredName": "Tom & Jerry <3"}`), 1)
	body := req.Body

	t.Run("the delivery verifies as the real API's documentation says", func(t *testing.T) {
		if err := testkit.VerifyConCatDelivery(raw, body, key.Body, url, s.URL); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("its token lives 120 s and says who sends it", func(t *testing.T) {
		var c jwt.MapClaims
		_, _, _ = jwt.NewParser().ParseUnverified(raw, &c)
		if c["exp"].(float64)-c["iat"].(float64) != 120 || req.Header.Get("User-Agent") != "ConCat/AxiosHTTPClient eventreg-webhooks" {
			t.Fatalf("claims %v, User-Agent %q", c, req.Header.Get("User-Agent"))
		}
	})
	t.Run("a changed body fails the int check", func(t *testing.T) {
		tampered := bytes.Replace(body, []byte("1001"), []byte("1002"), 1)
		if err := testkit.VerifyConCatDelivery(raw, tampered, key.Body, url, s.URL); err == nil || !strings.Contains(err.Error(), "int") {
			t.Fatalf("a tampered body: %v", err)
		}
	})
	t.Run("another URL's receiver refuses it (aud)", func(t *testing.T) {
		if err := testkit.VerifyConCatDelivery(raw, body, key.Body, rc.URL+"/other", s.URL); err == nil {
			t.Fatal("verified for another URL")
		}
	})
	t.Run("back to the eventreg format: aud is the client id, 5 minutes", func(t *testing.T) {
		got := s.Do(t, http.MethodPatch, path, tok, []byte(`{"format":"eventreg"}`))
		if got.Status != 200 || got.JSON(t)["format"] != "eventreg" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		req, raw := delivery(t, s, rc, authtest.Event(authapi.EventUserUpdated, "user:1001", `{"id":"1001"}`), 2)
		body := req.Body
		var c jwt.MapClaims
		_, _, _ = jwt.NewParser().ParseUnverified(raw, &c)
		if c["aud"] != "501" || c["exp"].(float64)-c["iat"].(float64) != 300 || c["sub"] != "webhook" || c["int"] == nil ||
			req.Header.Get("User-Agent") != "eventreg-webhooks" {
			t.Fatalf("claims %v, User-Agent %q", c, req.Header.Get("User-Agent"))
		}
		if err := testkit.VerifyConCatDelivery(raw, body, key.Body, "501", s.URL); err != nil {
			t.Fatalf("the PEM key verifies eventreg-format tokens too: %v", err)
		}
	})
	t.Run("a subscription is eventreg unless it asks", func(t *testing.T) {
		got := s.Do(t, http.MethodPost, "/api/v0/webhooks", tok, jsonBody(map[string]any{"url": rc.URL + "/plain", "events": []string{"user-updated"}}))
		if got.Status != 201 || got.JSON(t)["format"] != "eventreg" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
	t.Run("a bad format is refused and changes nothing", func(t *testing.T) {
		before := s.Do(t, http.MethodGet, "/api/v0/webhooks", tok, nil).JSON(t)
		for _, tc := range []struct{ method, path, body string }{
			{"POST", "/api/v0/webhooks", `{"url":"` + rc.URL + `","events":["user-updated"],"format":"ConCat"}`},
			{"POST", "/api/v0/webhooks", `{"url":"` + rc.URL + `","events":["user-updated"],"format":""}`},
			{"POST", "/api/v0/webhooks", `{"url":"` + rc.URL + `","events":["user-updated"],"format":1}`},
			{"POST", "/api/v0/webhooks", `{"url":"` + rc.URL + `","events":["user-updated"],"format":null}`},
			{"PATCH", path, `{"format":"jwt"}`},
			{"PATCH", path, `{"format":null}`},
		} {
			got := s.Do(t, tc.method, tc.path, tok, []byte(tc.body))
			cat, detail := got.Error(t)
			fields, _ := detail["fields"].(map[string]any)
			if got.Status != 400 || cat != "validation" || fields["format"] == nil {
				t.Fatalf("%s %s: %d %s", tc.method, tc.body, got.Status, got.Body)
			}
		}
		if d := cmp.Diff(before, s.Do(t, http.MethodGet, "/api/v0/webhooks", tok, nil).JSON(t)); d != "" {
			t.Fatalf("the subscriptions changed (-before +after):\n%s", d)
		}
	})
}
