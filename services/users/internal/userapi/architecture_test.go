package userapi_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit/archtable"
)

// TestArchitectureTable: the rows of docs/architecture.md's endpoint table
// that users answers or forwards are the routes server.Mount registers, and
// their handler → business → store chains are in the source.
func TestArchitectureTable(t *testing.T) {
	archtable.Check(t, "users", newEnv(t, envOptions{}).Routes)
}
