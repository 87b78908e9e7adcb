package consentdb_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/consent/consentdb"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestConformance runs the consent store's contract on PostgreSQL.
func TestConformance(t *testing.T) {
	storetest.Consents(t, func(t *testing.T) (consent.Store, client.Store) {
		pool := authtest.NewPool(t)
		return consentdb.New(pool), clientdb.New(pool)
	})
}
