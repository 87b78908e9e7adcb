package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/eventreg/eventreg/libs/httpserver"
	"github.com/eventreg/eventreg/libs/migrations"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestReadinessHonoursTheDeclaredOldestSchema: the set a service passes to
// Start decides its /readyz. On a schema one version behind the binary's
// newest migration, a set that declares it runs on that version is ready and
// one that does not is unready, saying why.
func TestReadinessHonoursTheDeclaredOldestSchema(t *testing.T) {
	set := migrations.New(fstest.MapFS{
		"0001_a.up.sql":   {Data: []byte("CREATE TABLE a (id int)")},
		"0001_a.down.sql": {Data: []byte("DROP TABLE a")},
		"0002_b.up.sql":   {Data: []byte("CREATE TABLE b (id int)")},
		"0002_b.down.sql": {Data: []byte("DROP TABLE b")},
	}, ".")
	dsn := testkit.NewDatabase(t)
	if err := set.UpTo(dsn, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		set   migrations.Set
		ready bool
	}{
		{"no declaration: the newest migration is needed", set, false},
		{"RunsOn(1)", set.RunsOn(1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := readyzOf(t, dsn, tc.set)
			if tc.ready && status != http.StatusOK {
				t.Fatalf("/readyz %d %s", status, body)
			}
			if !tc.ready && (status != http.StatusServiceUnavailable || !strings.Contains(body, "older than this binary needs")) {
				t.Fatalf("/readyz %d %s", status, body)
			}
		})
	}
}

// readyzOf starts the service skeleton on dsn with set and asks its /readyz once.
func readyzOf(t *testing.T, dsn string, set migrations.Set) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	base := Base{Config: httpserver.Config{PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", ShutdownTimeout: time.Second},
		DatabaseURL: dsn, LogLevel: "error", InternalAuth: servicetoken.Config{Key: strings.Repeat("i", servicetoken.MinKeyLength)}}
	rt, err := StartLogging(ctx, "readiness", base, set, io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := rt.Server.Listen(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	resp, err := http.Get("http://" + rt.Server.OpsAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, string(body)
}
