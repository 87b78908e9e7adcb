package migrations

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestDeclaresTheOldestSchemaItRunsOn: the set serve gives readiness
// declares OldestSchema, and readiness honours it (testkit.CheckOldestSchema).
func TestDeclaresTheOldestSchemaItRunsOn(t *testing.T) {
	testkit.CheckOldestSchema(t, Set(), OldestSchema)
}
