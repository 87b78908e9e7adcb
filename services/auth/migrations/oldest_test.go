package migrations

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"
)

// TestDeclaresTheOldestSchemaItRunsOn: the set serve gives readiness
// declares OldestSchema, and readiness honours it (testkit.CheckOldestSchema).
func TestDeclaresTheOldestSchemaItRunsOn(t *testing.T) {
	testkit.CheckOldestSchema(t, Set(), OldestSchema)
}
