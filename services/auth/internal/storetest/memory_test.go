package storetest_test

import (
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/grant"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

// The in-memory stores that grant's tests run on keep the contract the
// Redis stores keep.

func TestMemoryCodes(t *testing.T) {
	storetest.Codes(t, func(t *testing.T, ttl time.Duration) storetest.CodeStore { return storetest.NewMemoryCodes(ttl) })
}

func TestMemoryFamilies(t *testing.T) {
	storetest.Families(t, func(t *testing.T, idle, absolute time.Duration) storetest.TokenStores {
		f, d := storetest.NewMemoryTokens(idle, absolute, time.Hour)
		return storetest.TokenStores{Families: f, Denylist: d}
	})
}

func TestMemoryDenylist(t *testing.T) {
	storetest.Denylist(t, func(t *testing.T) grant.Denylist {
		_, d := storetest.NewMemoryTokens(time.Hour, time.Hour, time.Hour)
		return d
	})
}

func TestMemorySessions(t *testing.T) {
	storetest.Sessions(t, func(t *testing.T, idle, absolute time.Duration) storetest.SessionStore {
		return storetest.NewMemorySessions(idle, absolute)
	})
}
