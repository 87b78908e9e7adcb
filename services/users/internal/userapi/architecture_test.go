package userapi_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit/routecheck"
)

// TestEndpointChecklist: every route server.Mount registers, and every
// endpoint and row of users, is in each place docs/architecture.md's
// "Adding an endpoint" names, and its rows of the endpoint table are true
// to the source (libs/testkit/routecheck; `make endpoint-check`).
func TestEndpointChecklist(t *testing.T) {
	routecheck.Check(t, "users", newEnv(t, envOptions{}).Routes)
}
