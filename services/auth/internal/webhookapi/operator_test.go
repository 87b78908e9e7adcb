package webhookapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// TestOperatorDisableSticks: a subscription an operator disabled stays
// disabled whatever its app sends, until an operator enables it again.
func TestOperatorDisableSticks(t *testing.T) {
	s, tok, rc := startManaging(t)
	ctx := context.Background()
	id := s.Do(t, http.MethodPost, "/api/v0/webhooks", tok, jsonBody(map[string]any{"url": rc.URL, "events": []string{"user-updated"}})).JSON(t)["id"].(string)
	path := "/api/v0/webhooks/" + id
	off, on := webhook.StateDisabled, webhook.StateActive
	if _, err := s.App.Webhooks.Update(ctx, webhook.Operator, id, webhook.Change{State: &off}); err != nil {
		t.Fatal(err)
	}

	t.Run("the app cannot enable a subscription an operator disabled", func(t *testing.T) {
		got := s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"active","description":"again"}`))
		if cat, _ := got.Error(t); got.Status != http.StatusForbidden || cat != "access" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		m := s.Do(t, http.MethodGet, path, tok, nil).JSON(t)
		if m["state"] != "disabled" || m["disabledReason"] != "disabled by an operator" || m["disabledBy"] != "operator" || m["description"] != "" {
			t.Fatalf("after the refused PATCH: %v", m)
		}
	})
	t.Run("the app disabling it too leaves it the operator's", func(t *testing.T) {
		got := s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"disabled"}`))
		if m := got.JSON(t); got.Status != http.StatusOK || m["disabledBy"] != "operator" || m["disabledReason"] != "disabled by an operator" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		if got := s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"active"}`)); got.Status != http.StatusForbidden {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
	t.Run("an operator's disable replaces the app's own", func(t *testing.T) {
		if _, err := s.App.Webhooks.Update(ctx, webhook.Operator, id, webhook.Change{State: &on}); err != nil {
			t.Fatal(err)
		}
		if got := s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"disabled"}`)); got.Status != http.StatusOK || got.JSON(t)["disabledBy"] != "app" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		if _, err := s.App.Webhooks.Update(ctx, webhook.Operator, id, webhook.Change{State: &off}); err != nil {
			t.Fatal(err)
		}
		if got := s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"active"}`)); got.Status != http.StatusForbidden {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
	t.Run("once an operator enables it, the app manages it again", func(t *testing.T) {
		sub, err := s.App.Webhooks.Update(ctx, webhook.Operator, id, webhook.Change{State: &on})
		if err != nil || sub.State != webhook.StateActive {
			t.Fatalf("%+v %v", sub, err)
		}
		got := s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"disabled"}`))
		if m := got.JSON(t); got.Status != http.StatusOK || m["disabledBy"] != "app" || m["disabledReason"] != "disabled by the app" {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
		got = s.Do(t, http.MethodPatch, path, tok, []byte(`{"state":"active"}`))
		if m := got.JSON(t); got.Status != http.StatusOK || m["state"] != "active" || m["disabledBy"] != nil {
			t.Fatalf("%d %s", got.Status, got.Body)
		}
	})
}
