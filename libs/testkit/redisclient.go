package testkit

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/eventreg/eventreg/libs/redisdb"
)

// NewRedisClient starts a throwaway redis-server for t and returns a client
// of it; both end with t. It skips the test under -short.
func NewRedisClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	rdb, err := redisdb.Open(NewRedis(t), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
