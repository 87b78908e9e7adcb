package cli_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/volunteers/internal/cli"
)

// TestOutputFormats: -o takes text or json, as in users and auth; any other
// format is refused before the command touches the database.
func TestOutputFormats(t *testing.T) {
	testkit.CheckOutputFlags(t, cli.Root, []string{"import", "fixture.json"}, []string{"delete", "1001"})
}
