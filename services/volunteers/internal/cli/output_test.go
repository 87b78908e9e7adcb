package cli_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/services/volunteers/internal/cli"
)

// TestOutputFormats: -o takes text or json, as in users and auth; any other
// format is refused before the command touches the database (it used to be
// taken silently and text printed).
func TestOutputFormats(t *testing.T) {
	// Past the flags, every command fails on its configuration: no database is reached.
	t.Setenv("DATABASE_URL", "")
	os.Unsetenv("DATABASE_URL")
	run := func(args ...string) (string, error) {
		root := cli.Root()
		var out bytes.Buffer
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&bytes.Buffer{})
		err := root.ExecuteContext(context.Background())
		return out.String(), err
	}
	for _, args := range [][]string{{"import", "fixture.json"}, {"delete", "1001"}} {
		t.Run(args[0]+" refuses -o yaml", func(t *testing.T) {
			out, err := run(append(args, "-o", "yaml")...)
			if err == nil || !strings.Contains(err.Error(), `invalid argument "yaml" for "-o, --output" flag: must be "text" or "json"`) {
				t.Fatalf("want the flag refused, got %v", err)
			}
			if out != "" {
				t.Fatalf("printed %q", out)
			}
		})
		t.Run(args[0]+" accepts -o json", func(t *testing.T) {
			if _, err := run(append(args, "-o", "json")...); err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
				t.Fatalf("want the configuration error past the flags, got %v", err)
			}
		})
	}
}
