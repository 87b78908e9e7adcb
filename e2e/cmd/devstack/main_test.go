package main

import "testing"

// TestDevEnvPassesRedisClusterOn: `REDIS_CLUSTER=true make run` reaches every
// service (REDIS_URL itself becomes the stack's Redis, started by nobody).
func TestDevEnvPassesRedisClusterOn(t *testing.T) {
	t.Setenv("REDIS_CLUSTER", "true")
	if got := devEnv()["REDIS_CLUSTER"]; got != "true" {
		t.Fatalf("REDIS_CLUSTER=%q", got)
	}
}
