package refreshdb_test

import (
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/grant/refreshdb"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

// TestConformance runs the contracts of the family store and the denylist
// on Redis.
func TestConformance(t *testing.T) {
	rdb := testkit.NewRedisClient(t)
	t.Run("families", func(t *testing.T) {
		storetest.Families(t, func(t *testing.T, idle, absolute time.Duration) storetest.TokenStores {
			d := refreshdb.NewDenylist(rdb, time.Hour)
			return storetest.TokenStores{Families: refreshdb.New(rdb, d, refreshdb.Lifetimes{Idle: idle, Absolute: absolute}), Denylist: d}
		})
	})
	t.Run("denylist", func(t *testing.T) {
		storetest.Denylist(t, func(t *testing.T) grant.Denylist { return refreshdb.NewDenylist(rdb, time.Hour) })
	})
}
