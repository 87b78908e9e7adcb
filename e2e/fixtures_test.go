package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/resourcetest"
)

// demoFixture is the demo fixture (deploy/fixtures/demo.json) as a document
// a test can change.
func demoFixture(t testing.TB) map[string]any {
	t.Helper()
	root, err := stack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "fixtures", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// importFixture writes a fixture document with sections and runs
// `<service> import` on it.
func importFixture(t testing.TB, s *stack.Stack, service string, sections map[string]any) {
	t.Helper()
	doc := map[string]any{"conventionId": "2026"}
	for k, v := range sections {
		doc[k] = v
	}
	s.Command(t, service, "import", resourcetest.WriteFixtureJSON(t, doc))
}

// volunteerRecord is a fixture volunteer with departments (id, states) and
// an "Hours available" option when hours > 0.
func volunteerRecord(userID int64, deps [][2]any, hours int) map[string]any {
	var ds []any
	for _, d := range deps {
		ds = append(ds, map[string]any{"id": d[0], "states": d[1]})
	}
	opts := []any{map[string]any{"name": "Shirt size", "type": "select", "value": "M"}}
	if hours > 0 {
		opts = append(opts, map[string]any{"name": "Hours available", "type": "number", "value": hours})
	}
	return map[string]any{"userId": userID, "departments": ds, "options": opts,
		"contactMethods": []any{map[string]any{"name": "email", "value": fmt.Sprintf("u%d@example.org", userID), "isPrimary": true}}}
}

// registrationRecord is a fixture registration, unpaid, with badge as its badge name.
func registrationRecord(userID int64, badge string) map[string]any {
	return map[string]any{"userId": userID, "badgeName": badge, "status": "unpaid", "productId": "5",
		"productName": "Attendee", "productDisplayName": nil, "options": []any{map[string]any{"name": "Days", "type": "multi", "value": []string{"Sat"}}}}
}

// userRecord is the demo fixture's user with a new preferred name.
func userRecord(t testing.TB, id int64, preferred string) map[string]any {
	t.Helper()
	users, _ := demoFixture(t)["users"].([]any)
	for _, u := range users {
		if u, ok := u.(map[string]any); ok && fmt.Sprint(u["id"]) == fmt.Sprint(id) {
			u["preferredName"] = preferred
			return u
		}
	}
	t.Fatalf("no user %d in the demo fixture", id)
	return nil
}
