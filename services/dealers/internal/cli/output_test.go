package cli_test

import (
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/dealers/internal/cli"
)

// TestOutputFormats: -o takes text or json, as in the other services; any
// other format is refused before the command touches the database.
func TestOutputFormats(t *testing.T) {
	testkit.CheckOutputFlags(t, cli.Root, []string{"import", "fixture.json"}, []string{"list"}, []string{"show", "1"},
		[]string{"set-status", "1", "approved"}, []string{"delete-application", "1"})
}
