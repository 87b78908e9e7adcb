package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/consent"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Consents runs the contract of consent stores (consent.Store); open
// returns a store and the client store of its database (a consent is to a
// registered app) that holds no client with an id from 9000 to 9999.
func Consents(t *testing.T, open func(t *testing.T) (consent.Store, client.Store)) {
	s, apps := open(t)
	for _, c := range []client.Client{
		{ID: 9101, Name: "Badge Printer", Description: "Prints badges", Kind: client.KindOBO, SecretHash: []byte("h"),
			RedirectURIs: []string{"https://badge.example/cb"}, Scopes: scope.Parse("pii:basic pii:email")},
		{ID: 9102, Name: "Agenda", Description: "Your schedule", Kind: client.KindOBO, SecretHash: []byte("h"),
			RedirectURIs: []string{"https://agenda.example/cb"}, Scopes: scope.Parse("pii:basic")},
	} {
		_, err := apps.Create(ctx, c)
		must(t, "registering an app", err)
	}
	stamp := cmpopts.IgnoreFields(consent.Consent{}, "GrantedAt")
	given := func(user, app int64, scopes string) consent.Consent {
		return consent.Consent{UserID: user, ClientID: app, Scopes: scope.Parse(scopes), ClientScopes: scope.Parse("pii:basic pii:email")}
	}
	save := func(t *testing.T, c consent.Consent) {
		t.Helper()
		must(t, "saving a consent", s.Save(ctx, c))
	}

	t.Run("a saved consent is found with its scopes and the app's scopes then", func(t *testing.T) {
		want := given(7001, 9101, "pii:basic")
		save(t, want)
		got, err := s.Get(ctx, 7001, 9101)
		must(t, "reading", err)
		check(t, "the consent", got, want, stamp)
		if got.GrantedAt.IsZero() {
			t.Fatal("no time of the grant")
		}
	})
	t.Run("a user who gave no consent to an app has none", func(t *testing.T) {
		save(t, given(7002, 9101, "pii:basic"))
		_, err := s.Get(ctx, 7002, 9102)
		is(t, "another app", err, consent.ErrNotFound)
		_, err = s.Get(ctx, 7003, 9101)
		is(t, "another user", err, consent.ErrNotFound)
	})
	t.Run("a consent given again replaces the first", func(t *testing.T) {
		save(t, given(7004, 9101, "pii:basic"))
		want := given(7004, 9101, "pii:basic pii:email")
		save(t, want)
		got, err := s.Get(ctx, 7004, 9101)
		must(t, "reading", err)
		check(t, "the consent", got, want, stamp)
	})
	t.Run("a revoked consent is forgotten; revoking none is no error", func(t *testing.T) {
		save(t, given(7005, 9101, "pii:basic"))
		must(t, "revoking", s.Delete(ctx, 7005, 9101))
		_, err := s.Get(ctx, 7005, 9101)
		is(t, "reading it", err, consent.ErrNotFound)
		must(t, "revoking it again", s.Delete(ctx, 7005, 9101))
	})
	t.Run("a user's consents are listed with their apps' names, by name", func(t *testing.T) {
		save(t, given(7006, 9101, "pii:basic"))
		save(t, given(7006, 9102, "pii:basic"))
		save(t, given(7007, 9101, "pii:basic"))
		got, err := s.ListForUser(ctx, 7006)
		must(t, "listing", err)
		badge, agenda := given(7006, 9101, "pii:basic"), given(7006, 9102, "pii:basic")
		badge.ClientName, badge.ClientDescription = "Badge Printer", "Prints badges"
		agenda.ClientName, agenda.ClientDescription = "Agenda", "Your schedule"
		check(t, "the user's consents", got, []consent.Consent{agenda, badge}, stamp)
	})
}
