package webhookapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/tokenauth"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

func TestSubscriptionsAPI(t *testing.T) {
	s, tok, rc := startManaging(t)

	created := s.Do(t, http.MethodPost, "/api/v0/webhooks", tok, jsonBody(map[string]any{
		"url": rc.URL + "/in", "events": []string{"volunteer-updated", "user-updated"}, "description": "shift planner"}))
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	sub := created.JSON(t)
	id := sub["id"].(string)
	path := "/api/v0/webhooks/" + id

	t.Run("create answers the subscription and its location", func(t *testing.T) {
		if created.Header.Get("Location") != path || sub["url"] != rc.URL+"/in" || sub["state"] != "active" || sub["description"] != "shift planner" ||
			sub["disabledReason"] != nil || sub["failingSince"] != nil {
			t.Fatalf("%v %s", created.Header, created.Body)
		}
	})
	t.Run("list and get show it", func(t *testing.T) {
		list := s.Do(t, http.MethodGet, "/api/v0/webhooks", tok, nil)
		m := list.JSON(t)
		data, _ := m["data"].([]any)
		if list.Status != 200 || len(data) != 1 || m["nextPage"] != nil || m["hasMore"] != false {
			t.Fatalf("%d %s", list.Status, list.Body)
		}
		if got := s.Do(t, http.MethodGet, path, tok, nil); got.Status != 200 || got.JSON(t)["id"] != id {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
	t.Run("patch changes what it names", func(t *testing.T) {
		got := s.Do(t, http.MethodPatch, path, tok, []byte(`{"events":["user-updated"],"description":null}`))
		m := got.JSON(t)
		if got.Status != 200 || m["description"] != "" || len(m["events"].([]any)) != 1 || m["url"] != rc.URL+"/in" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		got = s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"disabled"}`))
		if m := got.JSON(t); got.Status != 200 || m["state"] != "disabled" || m["disabledReason"] != "disabled by the app" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		got = s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"active","url":"`+rc.URL+`/hooks"}`))
		if m := got.JSON(t); got.Status != 200 || m["state"] != "active" || m["disabledReason"] != nil || m["url"] != rc.URL+"/hooks" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
	t.Run("events are delivered; deliveries page by page", func(t *testing.T) {
		for i := range 3 {
			s.Publish(t, authtest.Event(authapi.EventUserUpdated, "user:100"+string(rune('1'+i)), `{"id":"1"}`))
		}
		authtest.Eventually(t, 10*time.Second, "3 receipts", func() bool { return rc.Count() == 3 })
		authtest.Eventually(t, 10*time.Second, "3 delivered", func() bool {
			m := s.Do(t, http.MethodGet, path+"/deliveries?state=delivered", tok, nil).JSON(t)
			return len(m["data"].([]any)) == 3
		})
		first := s.Do(t, http.MethodGet, path+"/deliveries?limit=2", tok, nil)
		m := first.JSON(t)
		if first.Status != 200 || len(m["data"].([]any)) != 2 || m["hasMore"] != true {
			t.Fatalf("%d %s", first.Status, first.Body)
		}
		next := s.Do(t, http.MethodGet, path+"/deliveries?limit=2&nextPage="+url.QueryEscape(m["nextPage"].(string)), tok, nil)
		n := next.JSON(t)
		if next.Status != 200 || len(n["data"].([]any)) != 1 || n["nextPage"] != nil {
			t.Fatalf("%d %s", next.Status, next.Body)
		}
		d := n["data"].([]any)[0].(map[string]any)
		if d["state"] != "delivered" || d["attempts"] != float64(1) || d["lastStatus"] != float64(204) || d["event"] != "user-updated" ||
			d["deliveredAt"] == nil || d["nextAttemptAt"] != nil || d["lastError"] != nil {
			t.Fatalf("%v", d)
		}
		if none := s.Do(t, http.MethodGet, path+"/deliveries?state=dead", tok, nil).JSON(t); len(none["data"].([]any)) != 0 {
			t.Fatalf("%v", none)
		}
	})
	t.Run("replay sends a delivery again; replay of the dead ones counts them", func(t *testing.T) {
		list := s.Do(t, http.MethodGet, path+"/deliveries?limit=1", tok, nil).JSON(t)
		did := list["data"].([]any)[0].(map[string]any)["id"].(string)
		got := s.Do(t, http.MethodPost, path+"/deliveries/"+did+"/replay", tok, nil)
		if m := got.JSON(t); got.Status != http.StatusAccepted || m["state"] != "pending" || m["attempts"] != float64(0) {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		authtest.Eventually(t, 10*time.Second, "the replay received", func() bool { return rc.Count() == 4 })
		if r := rc.Last(); r.Header.Get("Webhook-Id") != did {
			t.Fatalf("Webhook-Id %s, want %s", r.Header.Get("Webhook-Id"), did)
		}
		all := s.Do(t, http.MethodPost, path+"/replay", tok, nil)
		if all.Status != http.StatusAccepted || string(all.Body) != `{"replayed":0}` {
			t.Fatalf("%d %s", all.Status, all.Body)
		}
	})
	t.Run("delete removes it", func(t *testing.T) {
		if got := s.Do(t, http.MethodDelete, path, tok, nil); got.Status != http.StatusNoContent || len(got.Body) != 0 {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		if got := s.Do(t, http.MethodGet, path, tok, nil); got.Status != http.StatusNotFound {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
}

func TestWebhookTokenIsNotAnAccessToken(t *testing.T) {
	s, tok, rc := startManaging(t)
	if got := s.Do(t, http.MethodPost, "/api/v0/webhooks", tok, jsonBody(map[string]any{"url": rc.URL, "events": []string{"user-updated"}})); got.Status != 201 {
		t.Fatalf("%d %s", got.Status, got.Body)
	}
	req, webhookJWT := delivery(t, s, rc, authtest.Event(authapi.EventUserUpdated, "user:1001", `{"id":"1001"}`), 1)
	body := req.Body

	t.Run("it verifies with go-jose against auth's published JWKS", func(t *testing.T) {
		resp, err := http.Get(s.URL + "/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var set jose.JSONWebKeySet
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			t.Fatal(err)
		}
		parsed, err := josejwt.ParseSigned(webhookJWT, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			t.Fatal(err)
		}
		keys := set.Key(parsed.Headers[0].KeyID)
		var claims struct {
			josejwt.Claims
			BodySHA256 string `json:"body_sha256"`
		}
		if len(keys) != 1 || parsed.Claims(keys[0].Key, &claims) != nil {
			t.Fatal("the token does not verify against the JWKS")
		}
		if err := claims.Validate(josejwt.Expected{Issuer: s.URL, AnyAudience: josejwt.Audience{"501"}, Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if claims.ID != req.Header.Get("Webhook-Id") || claims.BodySHA256 == "" || len(body) == 0 {
			t.Fatalf("%+v", claims)
		}
	})
	t.Run("introspection calls it inactive", func(t *testing.T) {
		for _, app := range [][2]string{{authtest.ServiceID, authtest.ServiceSecret}, {authtest.ReaderID, authtest.ReaderSecret}} {
			form := url.Values{"token": {webhookJWT}}
			r, _ := http.NewRequest(http.MethodPost, s.URL+"/api/oauth/introspect", strings.NewReader(form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.SetBasicAuth(app[0], app[1])
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if resp.StatusCode != 200 || m["active"] != false {
				t.Fatalf("introspection by %s: %d %v", app[0], resp.StatusCode, m)
			}
		}
	})
	t.Run("resource services (tokenauth) refuse it", func(t *testing.T) {
		v, err := tokenauth.New(tokenauth.Config{JWKSURL: s.InternalURL + "/.well-known/jwks.json", Issuer: s.URL, Audience: "eventreg-api"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Validate(context.Background(), webhookJWT); !errors.Is(err, tokenauth.ErrInvalid) {
			t.Fatalf("tokenauth answered %v", err)
		}
		if _, err := v.Validate(context.Background(), tok); err != nil {
			t.Fatalf("the app's access token: %v", err)
		}
	})
	t.Run("the webhook API refuses it", func(t *testing.T) {
		if got := s.Do(t, http.MethodGet, "/api/v0/webhooks", webhookJWT, nil); got.Status != http.StatusUnauthorized {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
}
