package cli

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/pgdb"

	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/webhook"
	"github.com/eventreg/eventreg/services/auth/internal/webhook/webhookdb"
)

func TestWebhooksCommands(t *testing.T) {
	setup(t)
	t.Setenv("WEBHOOK_ALLOWED_NETWORKS", "127.0.0.1/32")
	var app struct {
		ClientID int64 `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(must(t, "clients", "create", "--name", "Hooks", "--kind", "service", "--scopes", "user:read webhook:manage", "-o", "json")), &app); err != nil {
		t.Fatal(err)
	}
	id := jsonNumber(app.ClientID)
	var sub struct {
		ID, State string
		ClientID  int64 `json:"client_id"`
	}
	// A target inside WEBHOOK_ALLOWED_NETWORKS only for a client an
	// operator allowed private targets.
	if _, err := run(t, "webhooks", "add", "--client", id, "--url", "http://127.0.0.1:9/in", "--events", "user-updated"); err == nil ||
		!strings.Contains(err.Error(), "not a public address") {
		t.Fatalf("a private target of a client not allowed them: %v", err)
	}
	if out := must(t, "webhooks", "allow-private", "--client", id, "-o", "json"); !strings.Contains(out, `"private_targets": true`) {
		t.Fatalf("allow-private printed %s", out)
	}
	if out := must(t, "webhooks", "private-apps", "-o", "json"); !strings.Contains(out, id) {
		t.Fatalf("private-apps printed %s", out)
	}
	out := must(t, "webhooks", "add", "--client", id, "--url", "http://127.0.0.1:9/in", "--events", "user-updated", "-o", "json")
	if err := json.Unmarshal([]byte(out), &sub); err != nil || sub.ClientID != app.ClientID || sub.State != "active" {
		t.Fatalf("add printed %s", out)
	}

	t.Run("add makes the eventreg format unless asked", func(t *testing.T) {
		var got struct{ Format string }
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Format != "eventreg" {
			t.Fatalf("add printed %s", out)
		}
		concat := must(t, "webhooks", "add", "--client", id, "--url", "http://127.0.0.1:9/concat", "--events", "user-updated", "--format", "concat", "-o", "json")
		var c struct{ ID, Format string }
		if err := json.Unmarshal([]byte(concat), &c); err != nil || c.Format != "concat" {
			t.Fatalf("add --format concat printed %s", concat)
		}
		must(t, "webhooks", "remove", c.ID)
	})
	t.Run("list shows it, for every client or one", func(t *testing.T) {
		for _, args := range [][]string{{"webhooks", "list", "-o", "json"}, {"webhooks", "list", "--client", id, "-o", "json"}, {"webhooks", "list"}} {
			if out := must(t, args...); !strings.Contains(out, sub.ID) {
				t.Fatalf("%v: %s", args, out)
			}
		}
		if out := must(t, "webhooks", "list", "--client", "501", "-o", "json"); strings.TrimSpace(out) != "[]" {
			t.Fatalf("%s", out)
		}
	})
	t.Run("add refuses what the API refuses", func(t *testing.T) {
		for name, args := range map[string][]string{
			"an event whose scope the client lacks": {"--client", id, "--url", "http://127.0.0.1:9/in", "--events", "volunteer-updated"},
			"a private address":                     {"--client", id, "--url", "https://10.0.0.1/in", "--events", "user-updated"},
			"an unknown event":                      {"--client", id, "--url", "http://127.0.0.1:9/in", "--events", "user-created"},
			"an unknown client":                     {"--client", "999999", "--url", "http://127.0.0.1:9/in", "--events", "user-updated"},
			"an unknown format":                     {"--client", id, "--url", "http://127.0.0.1:9/in", "--events", "user-updated", "--format", "jwt"},
		} {
			if _, err := run(t, append([]string{"webhooks", "add"}, args...)...); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})
	t.Run("disable and enable", func(t *testing.T) {
		type state struct {
			State          string `json:"state"`
			DisabledReason string `json:"disabled_reason"`
		}
		var s state
		_ = json.Unmarshal([]byte(must(t, "webhooks", "disable", sub.ID, "-o", "json")), &s)
		if s != (state{"disabled", "disabled by an operator"}) {
			t.Fatalf("%+v", s)
		}
		s = state{}
		_ = json.Unmarshal([]byte(must(t, "webhooks", "enable", sub.ID, "-o", "json")), &s)
		if s != (state{"active", ""}) {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("deliveries and replay", func(t *testing.T) {
		ctx := context.Background()
		pool, err := pgdb.Open(ctx, os.Getenv("DATABASE_URL"))
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		store := webhookdb.New(pool)
		hooks := webhook.NewService(store, clientdb.New(pool), webhook.NewPolicy(nil), nil)
		if _, err := hooks.Ingest(ctx, []authapi.Event{{ID: uuid.NewString(), Type: authapi.EventUserUpdated, Source: "users",
			Resource: "user:1", Data: json.RawMessage(`{}`), OccurredAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'dead', last_error = 'HTTP 500', next_attempt_at = NULL, finished_at = now()`); err != nil {
			t.Fatal(err)
		}
		var ds []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		}
		if err := json.Unmarshal([]byte(must(t, "webhooks", "deliveries", sub.ID, "--state", "dead", "-o", "json")), &ds); err != nil || len(ds) != 1 {
			t.Fatalf("%+v %v", ds, err)
		}
		if out := must(t, "webhooks", "deliveries", sub.ID); !strings.Contains(out, "HTTP 500") {
			t.Fatalf("%s", out)
		}
		if out := must(t, "webhooks", "replay", sub.ID, "-o", "json"); !strings.Contains(out, `"replayed": 1`) {
			t.Fatalf("%s", out)
		}
		if out := must(t, "webhooks", "replay", sub.ID, "--delivery", ds[0].ID, "-o", "json"); !strings.Contains(out, `"state": "pending"`) {
			t.Fatalf("%s", out)
		}
		if _, err := run(t, "webhooks", "replay", sub.ID, "--delivery", "nope"); err == nil {
			t.Fatal("an unknown delivery replayed")
		}
		if _, err := run(t, "webhooks", "deliveries", sub.ID, "--state", "lost"); err == nil {
			t.Fatal("an unknown state accepted")
		}
	})
	t.Run("remove", func(t *testing.T) {
		must(t, "webhooks", "remove", sub.ID)
		if _, err := run(t, "webhooks", "remove", sub.ID); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Fatalf("removing twice: %v", err)
		}
		if out := must(t, "webhooks", "list", "-o", "json"); strings.TrimSpace(out) != "[]" {
			t.Fatalf("%s", out)
		}
	})
}
