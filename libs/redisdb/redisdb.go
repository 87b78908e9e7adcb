// Package redisdb opens the go-redis client with short timeouts (a stopped Redis
// must give errors quickly, never hangs) and tracing of every command without
// its arguments (they hold token hashes). One REDIS_URL names a single node, a
// Sentinel-watched master, or (with REDIS_CLUSTER) a Redis Cluster; every
// caller gets a redis.UniversalClient either way.
package redisdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
)

// Timeouts of every client.
const (
	dialTimeout  = 2 * time.Second
	readTimeout  = time.Second
	writeTimeout = time.Second
	poolTimeout  = 2 * time.Second
	// clusterStateReload is how old a cluster client's slot map may get.
	clusterStateReload = time.Second
)

// errURL never repeats the URL: it may hold a password.
var errURL = errors.New("parsing REDIS_URL: invalid URL (value not shown)")

// Open returns a client for url; it does not wait for the server.
//   - redis://[:password@]host:port/db: one node;
//   - redis://[:password@]sentinel:26379/db?master_name=NAME&addr=sentinel2:26379…:
//     the master that Sentinel names (go-redis's failover form), followed across failovers;
//   - with cluster, redis://[:password@]seed:6379?addr=seed2:6379…: a Redis Cluster
//     (go-redis's cluster form; every seed is a node of the cluster).
func Open(rawURL string, cluster bool) (redis.UniversalClient, error) {
	var client redis.UniversalClient
	switch {
	case cluster:
		opts, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, errURL
		}
		bound(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout, &opts.MaxRetries)
		// go-redis re-reads the slot map on MOVED, not when a master stops
		// answering: after a failover it would keep dialing the dead master
		// for its default 60 s. One CLUSTER SLOTS a second bounds that.
		opts.ClusterStateReloadInterval = clusterStateReload
		client = redis.NewClusterClient(opts)
	case isFailover(rawURL):
		opts, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, errURL
		}
		bound(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout, &opts.MaxRetries)
		client = redis.NewFailoverClient(opts)
	default:
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, errURL
		}
		bound(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout, &opts.MaxRetries)
		client = redis.NewClient(opts)
	}
	if err := redisotel.InstrumentTracing(client, redisotel.WithDBStatement(false)); err != nil {
		return nil, fmt.Errorf("instrumenting redis: %w", err)
	}
	return client, nil
}

// bound sets the timeouts and retries every client has, whichever kind.
func bound(dial, read, write, pool *time.Duration, retries *int) {
	*dial, *read, *write, *pool, *retries = dialTimeout, readTimeout, writeTimeout, poolTimeout, 1
}

// isFailover reports whether url is go-redis's Sentinel form (it names master_name).
func isFailover(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && u.Query().Has("master_name")
}

// Ping is a readiness check.
func Ping(client redis.UniversalClient) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := client.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		return nil
	}
}
