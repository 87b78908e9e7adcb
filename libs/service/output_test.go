package service_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/eventreg/eventreg/libs/service"
)

func TestOutputFlag(t *testing.T) {
	run := func(args ...string) (string, error) {
		cmd := &cobra.Command{Use: "show", SilenceUsage: true, SilenceErrors: true}
		out := service.AddOutputFlag(cmd)
		cmd.RunE = func(cmd *cobra.Command, _ []string) error {
			return out.Print(cmd.OutOrStdout(), map[string]int{"n": 1}, "n is 1")
		}
		var b bytes.Buffer
		cmd.SetOut(&b)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return b.String(), err
	}
	t.Run("text by default", func(t *testing.T) {
		if got, err := run(); err != nil || got != "n is 1\n" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("json with -o json", func(t *testing.T) {
		if got, err := run("-o", "json"); err != nil || got != "{\n  \"n\": 1\n}\n" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("an unknown format is an error naming the flag, and nothing runs", func(t *testing.T) {
		for _, f := range []string{"yaml", "JSON", ""} {
			got, err := run("--output", f)
			if err == nil || !strings.Contains(err.Error(), `--output`) || !strings.Contains(err.Error(), `must be "text" or "json"`) || got != "" {
				t.Fatalf("-o %q: got %q, %v", f, got, err)
			}
		}
	})
}
