package consent_test

import (
	"testing"

	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// TestCovers: a stored consent spares the user the consent page only for a
// request within what the user granted, while the app's approved scopes are
// what they were.
func TestCovers(t *testing.T) {
	given := consent.Consent{Scopes: scope.Parse("pii:basic pii:email"), ClientScopes: scope.Parse("pii:basic pii:email pii:phone")}
	app := scope.Parse("pii:basic pii:email pii:phone")
	for _, tc := range []struct {
		name              string
		requested, client scope.Set
		covers            bool
	}{
		{"the same scopes", scope.Parse("pii:basic pii:email"), app, true},
		{"fewer scopes", scope.Parse("pii:email"), app, true},
		{"a scope the user did not grant", scope.Parse("pii:basic pii:phone"), app, false},
		{"the app approved for another scope since", scope.Parse("pii:basic"), scope.Parse("pii:basic pii:email pii:phone pii:address"), false},
		{"the app lost a scope since", scope.Parse("pii:basic"), scope.Parse("pii:basic pii:email"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := consent.Covers(given, tc.requested, tc.client); got != tc.covers {
				t.Fatalf("Covers = %v, want %v", got, tc.covers)
			}
		})
	}
}
