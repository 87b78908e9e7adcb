package redisdb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestStoppedRedisFailsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	p, url := testkit.StartRedisT(t, false)
	c, err := redisdb.Open(url, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := redisdb.Ping(c)(ctx); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(redisdb.NewPoolCollector(c))
	if n, err := testutil.GatherAndCount(reg, "redis_pool_connections"); err != nil || n != 1 {
		t.Fatalf("pool metrics: %d %v", n, err)
	}
	p.Kill()
	start := time.Now()
	if err := redisdb.Ping(c)(ctx); err == nil {
		t.Fatal("ping succeeded against a killed server")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("failure took %v", d)
	}
}

func TestBadURLIsNotEchoed(t *testing.T) {
	_, err := redisdb.Open("redis://:pa55word@host:port:extra/x", false)
	if err == nil || strings.Contains(err.Error(), "pa55word") {
		t.Fatalf("got %v", err)
	}
}
