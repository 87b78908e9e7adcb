package service

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/outbox"
	"github.com/eventreg/eventreg/libs/servicetoken"
)

func TestAuthEventsValidate(t *testing.T) {
	for url, ok := range map[string]bool{"": true, "http://auth:9090": true, "https://auth.internal": true, "auth:9090": false, "ftp://auth": false} {
		a := AuthEvents{AuthInternalURL: url}
		if err := a.Validate(); (err == nil) != ok {
			t.Errorf("%q: %v", url, err)
		}
	}
}

func TestStartRelay(t *testing.T) {
	render := func(context.Context, []outbox.Row) ([]json.RawMessage, error) { return nil, nil }
	newRuntime := func(t *testing.T) (*Runtime, *bytes.Buffer) {
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		// Nothing listens there: the relay only retries until stopped.
		pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return &Runtime{Name: "volunteers", Log: log, Pool: pool, Server: httpserver.New(httpserver.Config{}, log, "volunteers"),
			Credentials: servicetoken.NewSigner(servicetoken.Config{Key: strings.Repeat("i", servicetoken.MinKeyLength)}, "volunteers")}, &logs
	}
	t.Run("without AUTH_INTERNAL_URL nothing starts and the log says the events wait", func(t *testing.T) {
		rt, logs := newRuntime(t)
		if err := StartRelay(context.Background(), rt, "", render); err != nil {
			t.Fatal(err)
		}
		if len(rt.close) != 0 || !strings.Contains(logs.String(), "events wait in the outbox") {
			t.Fatalf("closers %d, log %s", len(rt.close), logs)
		}
	})
	t.Run("with it the relay runs until the context ends, and its metrics are registered", func(t *testing.T) {
		rt, _ := newRuntime(t)
		ctx, cancel := context.WithCancel(context.Background())
		if err := StartRelay(ctx, rt, "http://127.0.0.1:1", render); err != nil {
			t.Fatal(err)
		}
		mfs, err := rt.Server.Metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range mfs {
			found = found || mf.GetName() == "eventreg_outbox_oldest_seconds"
		}
		if !found || len(rt.close) != 1 {
			t.Fatalf("metrics registered %v, closers %d", found, len(rt.close))
		}
		cancel()
		wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer wcancel()
		if err := rt.close[0](wctx); err != nil {
			t.Fatalf("the relay did not stop: %v", err)
		}
	})
}
