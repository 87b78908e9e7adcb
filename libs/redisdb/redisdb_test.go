package redisdb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eventreg/eventreg/libs/redisdb"
	"github.com/eventreg/eventreg/libs/testkit"
)

func TestStoppedRedisFailsFast(t *testing.T) {
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

// TestOpenPicksTheClientOfTheURL: one REDIS_URL names a node, a Sentinel set
// (master_name) or, with cluster, a Redis Cluster; a bad one is refused
// without echoing it (it may hold a password).
func TestOpenPicksTheClientOfTheURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		cluster bool
		want    string
	}{
		{"redis://127.0.0.1:6379/0", false, "*redis.Client"},
		{"redis://127.0.0.1:26379/0?master_name=eventreg&addr=127.0.0.1:26380", false, "*redis.Client"},
		{"redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", true, "*redis.ClusterClient"},
	} {
		c, err := redisdb.Open(tc.url, tc.cluster)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if got := fmt.Sprintf("%T", c); got != tc.want {
			t.Errorf("%s (cluster=%v): %s, want %s", tc.url, tc.cluster, got, tc.want)
		}
		c.Close()
	}
	for _, bad := range []string{"redis://:s3cret@host:port:x/0", "redis://:s3cret@h:1/x?master_name=x"} {
		if _, err := redisdb.Open(bad, false); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := redisdb.Open("redis://:s3cret@host:port:x", true); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("cluster: %v", err)
	}
}
