package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a Redis Cluster of three masters with one replica each,
// on loopback, for failover tests.
type RedisCluster struct {
	// Nodes are the six processes, by port.
	Nodes map[int]*Process
	// URL is go-redis's cluster form: every node as a seed (REDIS_CLUSTER=true).
	URL string
}

// StartRedisCluster starts the cluster for t (stopped when t ends) and waits
// until every slot is served. nodeTimeout is the cluster's
// cluster-node-timeout: how long a master may be silent before its replica
// takes over. It skips t under -short.
func StartRedisCluster(t testing.TB, nodeTimeout time.Duration) *RedisCluster {
	t.Helper()
	NeedsServers(t, "a Redis Cluster")
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli not found: install Debian's redis-tools package")
	}
	c := &RedisCluster{Nodes: map[int]*Process{}}
	var addrs []string
	for i := 0; i < 6; i++ {
		// A node also listens on its cluster bus port: by default port+10000,
		// which may be taken (it is often in the ephemeral range), so both
		// are picked free, and a node that still loses a race for one is
		// started again on others.
		var (
			p    *Process
			port int
			err  error
		)
		for attempt := 0; attempt < 3; attempt++ {
			port = freePortT(t)
			dir := t.TempDir()
			p, _, err = startRedisServer(context.Background(), dir, port, "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(freePortT(t)),
				"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
				"--appendonly", "yes", "--appendfsync", "everysec")
			if err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("starting cluster node: %v", err)
		}
		t.Cleanup(func() { _ = p.Stop() })
		c.Nodes[port] = p
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.URL = "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer rc.Close()
	if err := Poll(context.Background(), 30*time.Second, func(ctx context.Context) error {
		info, err := rc.ClusterInfo(ctx).Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("cluster not ready: %s", firstLine(info))
		}
		// Every replica in sync: a replica that never synced cannot take over.
		return rc.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
			info, err := shard.Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "state=online") && !strings.Contains(info, "master_link_status:up") {
				return fmt.Errorf("replication of %s not in sync yet", shard.Options().Addr)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// MasterOf returns the port of the master that serves key now.
func (c *RedisCluster) MasterOf(t testing.TB, key string) int {
	t.Helper()
	for port := range c.Nodes {
		n := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
		slot, err1 := n.ClusterKeySlot(context.Background(), key).Result()
		slots, err2 := n.ClusterSlots(context.Background()).Result()
		n.Close()
		if err1 != nil || err2 != nil {
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				_, p, _ := strings.Cut(s.Nodes[0].Addr, ":")
				master, _ := strconv.Atoi(p)
				return master
			}
		}
	}
	t.Fatalf("no master serves %s", key)
	return 0
}

// RedisSentinel is a master, a replica and three sentinels watching them.
type RedisSentinel struct {
	Master, Replica         *Process
	MasterPort, ReplicaPort int
	// URL is go-redis's failover form: the sentinels and master_name.
	URL string
}

// SentinelMaster is the name the sentinels know the master by.
const SentinelMaster = "eventreg"

// StartRedisSentinel starts the set for t (stopped when t ends); the
// sentinels declare the master down after downAfter. It skips t under
// -short.
func StartRedisSentinel(t testing.TB, downAfter time.Duration) *RedisSentinel {
	t.Helper()
	NeedsServers(t, "Redis with Sentinel")
	s := &RedisSentinel{MasterPort: freePortT(t), ReplicaPort: freePortT(t)}
	var err error
	if s.Master, _, err = startRedisServer(context.Background(), t.TempDir(), s.MasterPort, "--appendonly", "yes", "--appendfsync", "everysec"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Master.Stop() })
	if s.Replica, _, err = startRedisServer(context.Background(), t.TempDir(), s.ReplicaPort, "--appendonly", "yes", "--appendfsync", "everysec",
		"--replicaof", "127.0.0.1", strconv.Itoa(s.MasterPort)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Replica.Stop() })
	var sentinels []string
	for i := 0; i < 3; i++ {
		port := freePortT(t)
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 2000\nsentinel parallel-syncs %s 1\n",
			SentinelMaster, s.MasterPort, SentinelMaster, downAfter.Milliseconds(), SentinelMaster, SentinelMaster)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		p, _, err := startRedisServer(context.Background(), dir, port, conf, "--sentinel")
		if err != nil {
			t.Fatalf("starting sentinel: %v", err)
		}
		t.Cleanup(func() { _ = p.Stop() })
		sentinels = append(sentinels, "127.0.0.1:"+strconv.Itoa(port))
	}
	s.URL = "redis://" + sentinels[0] + "/0?master_name=" + SentinelMaster + "&addr=" + strings.Join(sentinels[1:], "&addr=")
	master := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(s.MasterPort)})
	defer master.Close()
	if err := Poll(context.Background(), 30*time.Second, func(ctx context.Context) error {
		info, err := master.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "state=online") {
			return fmt.Errorf("replica not in sync yet")
		}
		for _, addr := range sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
			_, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
			sc.Close()
			if err != nil {
				return fmt.Errorf("sentinel %s: %w", addr, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func freePortT(t testing.TB) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}
