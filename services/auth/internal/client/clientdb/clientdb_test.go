package clientdb_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/client/clientdb"
	"github.com/eventreg/eventreg/services/auth/internal/storetest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestConformance runs the client store's contract on PostgreSQL.
func TestConformance(t *testing.T) {
	storetest.Clients(t, func(t *testing.T) client.Store { return clientdb.New(authtest.NewPool(t)) })
}
