package testkit

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// CheckOutputFlags checks that each of commands (arguments of root()'s
// commands) takes -o text or json (service.AddOutputFlag) and refuses any
// other format before it reaches the database: with DATABASE_URL unset, -o
// json gets as far as the configuration error, -o yaml not even there.
func CheckOutputFlags(t *testing.T, root func() *cobra.Command, commands ...[]string) {
	t.Helper()
	t.Setenv("DATABASE_URL", "")
	os.Unsetenv("DATABASE_URL")
	run := func(args ...string) (string, error) {
		cmd := root()
		var out bytes.Buffer
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.ExecuteContext(context.Background())
		return out.String(), err
	}
	for _, args := range commands {
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
