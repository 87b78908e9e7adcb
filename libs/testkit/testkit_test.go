package testkit_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestNewDatabaseIsUsableAndIsolated(t *testing.T) {
	a, b := testkit.NewDatabase(t), testkit.NewDatabase(t)
	if a == b {
		t.Fatal("two tests share a database")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
}

func TestNewRedis(t *testing.T) {
	opts, err := redis.ParseURL(testkit.NewRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestStartPostgresThrowaway(t *testing.T) {
	testkit.NeedsServers(t, "a PostgreSQL cluster of its own")
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, dsn, err := testkit.StartPostgres(context.Background(), t.TempDir()+"/data", port)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query: %v", err)
	}
	conn.Close(context.Background())
}

func TestExplainListsThePlanNodes(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testkit.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	nodes := testkit.Explain(t, conn, "SELECT id FROM t WHERE id > $1 ORDER BY id LIMIT 5", 3)
	if len(nodes) == 0 || nodes[0].Kind != "Limit" || nodes[0].InSubplan {
		t.Fatalf("nodes %+v", nodes)
	}
	var onT bool
	for _, n := range nodes[1:] {
		onT = onT || n.Relation == "t"
	}
	if !onT {
		t.Fatalf("no node reads t: %+v", nodes)
	}
}

// FreePort's ports are bindable, distinct within the process, and outside
// the kernel's ephemeral range, where outgoing connections could take them.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	first := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			first, _ = strconv.Atoi(f[0])
		}
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := testkit.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if first-20000 >= 1000 && (p < 20000 || p >= first) {
			t.Fatalf("port %d is not in [20000, %d)", p, first)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d cannot be bound: %v", p, err)
		}
		ln.Close()
	}
}

func TestJSONDiffNamesTheFieldThatDiffers(t *testing.T) {
	if d := testkit.JSONDiff([]byte(`{"a": 1, "b": [1, 2]}`), []byte(`{"b":[1,2],"a":1}`)); d != "" {
		t.Errorf("the same document in another layout differs: %s", d)
	}
	d := testkit.JSONDiff([]byte(`{"name": "alice", "id": "1001"}`), []byte(`{"name": "bob", "id": "1001"}`))
	// go-cmp varies its spacing on purpose: only the values are matched.
	alice, bob := strings.Index(d, `string("alice")`), strings.Index(d, `string("bob")`)
	if alice < 0 || bob < alice {
		t.Errorf("the diff should show the differing field, want then got: %s", d)
	}
	if d := testkit.JSONDiff([]byte(`{}`), []byte(`not json`)); !strings.Contains(d, "got is not JSON") {
		t.Errorf("a body that is not JSON: %q", d)
	}
}

func TestBytesDiffTellsLayoutFromValues(t *testing.T) {
	if d := testkit.BytesDiff([]byte(`{"a":1}`), []byte(`{"a":1}`)); d != "" {
		t.Errorf("the same bytes: %s", d)
	}
	if d := testkit.BytesDiff([]byte(`{"a":1,"b":2}`), []byte(`{"b":2,"a":1}`)); !strings.Contains(d, "the same values in other bytes") {
		t.Errorf("other key order: %s", d)
	}
	if d := testkit.BytesDiff([]byte(`{"a":1}`), []byte(`{"a":2}`)); !strings.Contains(d, "float64(1)") || !strings.Contains(d, "float64(2)") {
		t.Errorf("another value: %s", d)
	}
}
