// Package redisdb opens the go-redis client with short timeouts (a stopped Redis
// must give errors quickly, never hangs) and tracing of every command without
// its arguments (they hold token hashes).
package redisdb

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
)

// Open parses a redis:// URL and returns a client; it does not wait for the server.
func Open(url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parsing REDIS_URL: invalid URL (value not shown)")
	}
	opts.DialTimeout = 2 * time.Second
	opts.ReadTimeout = time.Second
	opts.WriteTimeout = time.Second
	opts.PoolTimeout = 2 * time.Second
	opts.MaxRetries = 1
	client := redis.NewClient(opts)
	if err := redisotel.InstrumentTracing(client, redisotel.WithDBStatement(false)); err != nil {
		return nil, fmt.Errorf("instrumenting redis: %w", err)
	}
	return client, nil
}

// Ping is a readiness check.
func Ping(client *redis.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := client.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		return nil
	}
}
