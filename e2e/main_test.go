// Package e2e holds the end-to-end tests: the real service binaries behind the
// real nginx gateway, with PostgreSQL and Redis, driven by real clients.
package e2e

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
