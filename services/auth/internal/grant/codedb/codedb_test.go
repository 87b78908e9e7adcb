package codedb_test

import (
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/grant/codedb"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestConformance runs the code store's contract on Redis.
func TestConformance(t *testing.T) {
	rdb := testkit.NewRedisClient(t)
	storetest.Codes(t, func(t *testing.T, ttl time.Duration) storetest.CodeStore { return codedb.New(rdb, ttl) })
}
