package webhookapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventreg/eventreg/libs/authapi"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

func TestEventIntake(t *testing.T) {
	s, tok, rc := startManaging(t)
	s.Do(t, http.MethodPost, "/api/v0/webhooks", tok, jsonBody(map[string]any{"url": rc.URL, "events": []string{"volunteer-updated"}}))
	post := func(ct, body string) (int, string) {
		t.Helper()
		resp := s.Internal(t, http.MethodPost, authapi.PathEvents, ct, strings.NewReader(body))
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	stored := func() int {
		t.Helper()
		var n int
		if err := s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	batch := []authapi.Event{authtest.Event("volunteer-updated", "volunteer:2026:1", `{"a":1}`), authtest.Event("user-updated", "user:1", `{"b":2}`)}
	t.Run("a batch is accepted once", func(t *testing.T) {
		if n := s.Publish(t, batch...); n != 2 {
			t.Fatalf("accepted %d", n)
		}
		if n := s.Publish(t, batch...); n != 0 {
			t.Fatalf("accepted %d the second time", n)
		}
		authtest.Eventually(t, 10*time.Second, "the delivery", func() bool { return rc.Count() == 1 })
	})
	// eventJSON is one valid event, changed by mutate.
	eventJSON := func(mutate func(m map[string]any)) string {
		m := map[string]any{"id": uuid.NewString(), "type": "user-updated", "source": "users", "resource": "user:9",
			"data": map[string]any{"id": "9"}, "occurredAt": time.Now().Format(time.RFC3339Nano)}
		mutate(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	valid := func(mutate func(m map[string]any)) string { return `{"events":[` + eventJSON(mutate) + `]}` }
	many := make([]string, 1001)
	for i := range many {
		many[i] = eventJSON(func(map[string]any) {})
	}
	cases := []struct {
		name, ct, body string
		status         int
	}{
		{"not JSON", "application/json", `{"events":`, 400},
		{"no events", "application/json", `{}`, 400},
		{"an unknown field", "application/json", `{"events":[],"more":true}`, 400},
		{"an unknown field of an event", "application/json", valid(func(m map[string]any) { m["extra"] = 1 }), 400},
		{"a field of the wrong type", "application/json", valid(func(m map[string]any) { m["type"] = 7 }), 400},
		{"an id that is not a UUID", "application/json", valid(func(m map[string]any) { m["id"] = "42" }), 400},
		{"an unknown type", "application/json", valid(func(m map[string]any) { m["type"] = "user-created" }), 400},
		{"no resource", "application/json", valid(func(m map[string]any) { delete(m, "resource") }), 400},
		{"a NUL in the source", "application/json", valid(func(m map[string]any) { m["source"] = "users\x00" }), 400},
		{"a NUL in the resource", "application/json", valid(func(m map[string]any) { m["resource"] = "user:\x001" }), 400},
		{"no data", "application/json", valid(func(m map[string]any) { delete(m, "data") }), 400},
		{"a bad time", "application/json", valid(func(m map[string]any) { m["occurredAt"] = "yesterday" }), 400},
		{"a bad traceparent", "application/json", valid(func(m map[string]any) { m["traceparent"] = "00-nope" }), 400},
		{"more than 1000 events", "application/json", `{"events":[` + strings.Join(many, ",") + `]}`, 400},
		{"another content type", "text/plain", `{"events":[]}`, 415},
		{"a body over the limit", "application/json", `{"events":[],"pad":"` + strings.Repeat("x", 9<<20) + `"}`, 413},
	}
	before := stored()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(tc.ct, tc.body)
			if status != tc.status || !strings.Contains(body, `"errors"`) {
				t.Fatalf("%d, want %d: %.300s", status, tc.status, body)
			}
		})
	}
	t.Run("nothing was stored", func(t *testing.T) {
		if n := stored(); n != before {
			t.Fatalf("%d events stored by refused batches", n-before)
		}
	})
	t.Run("an empty batch is accepted", func(t *testing.T) {
		if status, body := post("application/json", `{"events":[]}`); status != 200 || body != `{"accepted":0}` {
			t.Fatalf("%d %s", status, body)
		}
	})
	t.Run("a batch of 1000 is accepted", func(t *testing.T) {
		status, body := post("application/json", `{"events":[`+strings.Join(many[:1000], ",")+`]}`)
		if status != 200 || body != fmt.Sprintf(`{"accepted":%d}`, 1000) {
			t.Fatalf("%d %.300s", status, body)
		}
	})
}
