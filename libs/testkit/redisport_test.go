package testkit

import (
	"context"
	"errors"
	"testing"
)

// A port another redis-server holds is not taken for this one's: the other
// would vanish under the test when its own test ends.
func TestStartRedisRefusesAPortAnotherServerHolds(t *testing.T) {
	NeedsServers(t, "redis-server")
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := StartRedis(context.Background(), t.TempDir(), port, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Stop() })
	if p, _, err := StartRedis(context.Background(), t.TempDir(), port, false); err == nil || !errors.Is(err, errRedisExited) {
		if p != nil {
			_ = p.Stop()
		}
		t.Fatalf("a second redis-server on a taken port: %v, want errRedisExited", err)
	}
}
