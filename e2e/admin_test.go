package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/eventreg/eventreg/e2e/stack"
)

// commandJSON runs the admin command `<service> args... -o json`, as an
// operator would, and decodes what it prints into v.
func commandJSON(t testing.TB, s *stack.Stack, v any, service string, args ...string) {
	t.Helper()
	at := slices.Index(args, "--") // flags go before the arguments that end them
	if at < 0 {
		at = len(args)
	}
	args = slices.Insert(slices.Clone(args), at, "-o", "json")
	out := s.Command(t, service, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s %s: %v\n%s", service, strings.Join(args, " "), err, out)
	}
}

// createClient creates an app with `auth clients create` and returns its
// id and secret.
func createClient(t testing.TB, s *stack.Stack, name, description, kind, scopes string) (id, secret string) {
	t.Helper()
	var c struct {
		ID     int64  `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	commandJSON(t, s, &c, "auth", "clients", "create", "--name", name, "--description", description, "--kind", kind, "--scopes", scopes)
	return fmt.Sprint(c.ID), c.Secret
}
