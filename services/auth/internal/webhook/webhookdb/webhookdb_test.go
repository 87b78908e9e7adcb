package webhookdb_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
	"github.com/eventreg/eventreg/services/auth/internal/webhook/webhookdb"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestConformance runs the webhook store's contract on PostgreSQL.
func TestConformance(t *testing.T) {
	storetest.Webhooks(t, func(t *testing.T) (storetest.WebhookStore, client.Store) {
		pool := authtest.NewPool(t)
		return webhookdb.New(pool), clientdb.New(pool)
	})
}
