package server_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit/routecheck"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

// TestEndpointChecklist: every route Mount registers, and every endpoint,
// page and row of auth, is in each place docs/architecture.md's "Adding an
// endpoint" names, and its rows of the endpoint table are true to the
// source (libs/testkit/routecheck; `make endpoint-check`).
func TestEndpointChecklist(t *testing.T) {
	routecheck.Check(t, "auth", authtest.Start(t, authtest.Options{}).Routes)
}
