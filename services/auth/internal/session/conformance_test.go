package session_test

import (
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/session"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

// TestConformance runs the session store's contract on Redis.
func TestConformance(t *testing.T) {
	rdb := testkit.NewRedisClient(t)
	storetest.Sessions(t, func(t *testing.T, idle, absolute time.Duration) storetest.SessionStore {
		return session.New(rdb, idle, absolute)
	})
}
