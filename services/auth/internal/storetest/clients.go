package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/eventreg/eventreg/services/auth/internal/client"
	"github.com/eventreg/eventreg/services/auth/internal/scope"
)

// Clients runs the contract of client stores (client.Store); open returns
// a store that holds no client with an id from 9000 to 9999.
func Clients(t *testing.T, open func(t *testing.T) client.Store) {
	s := open(t)
	stamps := cmpopts.IgnoreFields(client.Client{}, "CreatedAt", "UpdatedAt")
	app := func(id int64) client.Client {
		return client.Client{ID: id, Name: "App", Description: "Does things", Kind: client.KindOBO, SecretHash: []byte("hash-1"),
			RedirectURIs: []string{"https://app.example/cb"}, Scopes: scope.Parse("openid pii:basic"), RequirePKCE: true,
			IDTokenAlg: "ES256", PostLogoutRedirectURIs: []string{"https://app.example/bye"}}
	}
	get := func(t *testing.T, id int64) client.Client {
		t.Helper()
		c, err := s.Get(ctx, id)
		must(t, "reading the client", err)
		return c
	}

	t.Run("a created client reads back as it was stored", func(t *testing.T) {
		want := app(9001)
		created, err := s.Create(ctx, want)
		must(t, "creating", err)
		check(t, "the created client", created, want, stamps)
		got := get(t, 9001)
		check(t, "the client read back", got, want, stamps)
		if got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
			t.Fatalf("no creation or update time: %+v", got)
		}
	})
	t.Run("a client without an id gets a fresh one", func(t *testing.T) {
		a, err := s.Create(ctx, client.Client{Name: "A", Kind: client.KindService, SecretHash: []byte("h"), Scopes: scope.Parse("user:read")})
		must(t, "creating the first", err)
		b, err := s.Create(ctx, client.Client{Name: "B", Kind: client.KindService, SecretHash: []byte("h"), Scopes: scope.Parse("user:read")})
		must(t, "creating the second", err)
		if a.ID <= 0 || b.ID <= 0 || a.ID == b.ID {
			t.Fatalf("ids %d and %d", a.ID, b.ID)
		}
		check(t, "the client read back", get(t, b.ID).Name, "B")
	})
	t.Run("creating a client whose id is taken fails", func(t *testing.T) {
		_, err := s.Create(ctx, app(9002))
		must(t, "creating", err)
		if _, err := s.Create(ctx, app(9002)); err == nil {
			t.Fatal("a second client with one id was created")
		}
	})
	t.Run("an unknown client is not found", func(t *testing.T) {
		_, err := s.Get(ctx, 9999)
		is(t, "reading", err, client.ErrNotFound)
		is(t, "replacing its secret", s.UpdateSecret(ctx, 9999, []byte("x")), client.ErrNotFound)
		is(t, "deleting", s.Delete(ctx, 9999), client.ErrNotFound)
	})
	t.Run("a replaced secret is the one read", func(t *testing.T) {
		_, err := s.Create(ctx, app(9003))
		must(t, "creating", err)
		must(t, "replacing the secret", s.UpdateSecret(ctx, 9003, []byte("hash-2")))
		check(t, "the secret hash", get(t, 9003).SecretHash, []byte("hash-2"))
	})
	t.Run("a deleted client is gone", func(t *testing.T) {
		_, err := s.Create(ctx, app(9004))
		must(t, "creating", err)
		must(t, "deleting", s.Delete(ctx, 9004))
		_, err = s.Get(ctx, 9004)
		is(t, "reading it", err, client.ErrNotFound)
	})
	t.Run("the list holds every client, by id", func(t *testing.T) {
		for _, id := range []int64{9006, 9005} {
			_, err := s.Create(ctx, app(id))
			must(t, "creating", err)
		}
		all, err := s.List(ctx)
		must(t, "listing", err)
		var ids []int64
		for i, c := range all {
			if i > 0 && all[i-1].ID >= c.ID {
				t.Fatalf("not by id: %d before %d", all[i-1].ID, c.ID)
			}
			if c.ID == 9005 || c.ID == 9006 {
				ids = append(ids, c.ID)
			}
		}
		check(t, "the clients created", ids, []int64{9005, 9006})
	})
	t.Run("existing tells which ids exist", func(t *testing.T) {
		_, err := s.Create(ctx, app(9007))
		must(t, "creating", err)
		got, err := s.Existing(ctx, []int64{9007, 9998})
		must(t, "asking", err)
		check(t, "existing", got, map[int64]bool{9007: true})
	})
	t.Run("upsert inserts and updates, leaves unchanged clients alone and keeps a secret it is not given", func(t *testing.T) {
		_, err := s.Create(ctx, app(9008))
		must(t, "creating", err)
		renamed, unchanged, fresh := app(9008), app(9009), app(9010)
		_, err = s.Create(ctx, unchanged)
		must(t, "creating", err)
		renamed.Name, renamed.SecretHash = "Renamed", nil
		changed, err := s.Upsert(ctx, []client.Client{renamed, unchanged, fresh})
		must(t, "upserting", err)
		check(t, "changed (true: inserted)", changed, map[int64]bool{9008: false, 9010: true})
		got := get(t, 9008)
		check(t, "the updated client's name and kept secret", []string{got.Name, string(got.SecretHash)}, []string{"Renamed", "hash-1"})
		again, err := s.Upsert(ctx, []client.Client{renamed, unchanged, fresh})
		must(t, "upserting again", err)
		check(t, "changed the second time", again, map[int64]bool{})
	})
}
