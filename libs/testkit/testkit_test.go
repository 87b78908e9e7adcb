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
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
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
