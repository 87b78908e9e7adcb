package server_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit/archtable"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// TestArchitectureTable: the rows of docs/architecture.md's endpoint table
// that auth answers are the routes Mount registers, and their handler →
// business → store chains are in the source.
func TestArchitectureTable(t *testing.T) {
	archtable.Check(t, "auth", authtest.Start(t, authtest.Options{}).Routes)
}
