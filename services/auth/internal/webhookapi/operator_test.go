package webhookapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// TestOperatorDisableSticks: a subscription an operator disabled stays
// disabled whatever its app sends, until an operator enables it again.
func TestOperatorDisableSticks(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	tok := token(t, s, authtest.ServiceID, authtest.ServiceSecret, "webhook:manage")
	rc := newReceiver(t)
	id := call(t, s, http.MethodPost, "/api/v0/webhooks", tok, jsonBody(map[string]any{"url": rc.URL, "events": []string{"user-updated"}})).json(t)["id"].(string)
	path := "/api/v0/webhooks/" + id
	off, on := webhook.StateDisabled, webhook.StateActive
	if _, err := s.App.Webhooks.Update(ctx, webhook.Operator, id, webhook.Change{State: &off}); err != nil {
		t.Fatal(err)
	}

	t.Run("the app cannot enable a subscription an operator disabled", func(t *testing.T) {
		got := call(t, s, http.MethodPatch, path, tok, []byte(`{"state":"active","description":"again"}`))
		if cat, _ := got.errorOf(t); got.status != http.StatusForbidden || cat != "access" {
			t.Fatalf("%d %s", got.status, got.body)
		}
		m := call(t, s, http.MethodGet, path, tok, nil).json(t)
		if m["state"] != "disabled" || m["disabledReason"] != "disabled by an operator" || m["disabledBy"] != "operator" || m["description"] != "" {
			t.Fatalf("after the refused PATCH: %v", m)
		}
	})
	t.Run("the app disabling it too leaves it the operator's", func(t *testing.T) {
		got := call(t, s, http.MethodPatch, path, tok, []byte(`{"state":"disabled"}`))
		if m := got.json(t); got.status != http.StatusOK || m["disabledBy"] != "operator" || m["disabledReason"] != "disabled by an operator" {
			t.Fatalf("%d %s", got.status, got.body)
		}
		if got := call(t, s, http.MethodPatch, path, tok, []byte(`{"state":"active"}`)); got.status != http.StatusForbidden {
			t.Fatalf("%d %s", got.status, got.body)
		}
	})
	t.Run("an operator's disable replaces the app's own", func(t *testing.T) {
		if _, err := s.App.Webhooks.Update(ctx, webhook.Operator, id, webhook.Change{State: &on}); err != nil {
			t.Fatal(err)
		}
		if got := call(t, s, http.MethodPatch, path, tok, []byte(`{"state":"disabled"}`)); got.status != http.StatusOK || got.json(t)["disabledBy"] != "app" {
			t.Fatalf("%d %s", got.status, got.body)
		}
		if _, err := s.App.Webhooks.Update(ctx, webhook.Operator, id, webhook.Change{State: &off}); err != nil {
			t.Fatal(err)
		}
		if got := call(t, s, http.MethodPatch, path, tok, []byte(`{"state":"active"}`)); got.status != http.StatusForbidden {
			t.Fatalf("%d %s", got.status, got.body)
		}
	})
	t.Run("once an operator enables it, the app manages it again", func(t *testing.T) {
		sub, err := s.App.Webhooks.Update(ctx, webhook.Operator, id, webhook.Change{State: &on})
		if err != nil || sub.State != webhook.StateActive {
			t.Fatalf("%+v %v", sub, err)
		}
		got := call(t, s, http.MethodPatch, path, tok, []byte(`{"state":"disabled"}`))
		if m := got.json(t); got.status != http.StatusOK || m["disabledBy"] != "app" || m["disabledReason"] != "disabled by the app" {
			t.Fatalf("%d %s", got.status, got.body)
		}
		got = call(t, s, http.MethodPatch, path, tok, []byte(`{"state":"active"}`))
		if m := got.json(t); got.status != http.StatusOK || m["state"] != "active" || m["disabledBy"] != nil {
			t.Fatalf("%d %s", got.status, got.body)
		}
	})
}
