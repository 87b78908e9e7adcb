package dealerdb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/outbox/outboxtest"
	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer/dealerdb"
	"github.com/eventreg/eventreg/services/dealers/migrations"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func ptr[T any](v T) *T { return &v }

func rec(id, userID int64, apps ...fixture.DealerApplication) fixture.Dealer {
	return fixture.Dealer{ID: id, UserID: userID, Name: fmt.Sprint("Dealer ", id), AddressLine1: "1 Main St",
		AddressCity: "Springfield", AddressZipcode: "62701", AddressState: "IL", AddressCountry: "US", Applications: apps}
}

func app(id int64, status string) fixture.DealerApplication {
	return fixture.DealerApplication{ID: id, Status: status, TableType: fixture.Product{ID: "31", Name: "table", Paid: true},
		DealerArea: fixture.DealerArea{ID: 1, Name: "Dealers' Den"}}
}

func newStore(t *testing.T) (*dealerdb.Store, *pgxpool.Pool) {
	_, pool := resourcetest.NewPool(t, migrations.Set())
	return dealerdb.New(pool), pool
}

func load(t *testing.T, st *dealerdb.Store, conv string, recs ...fixture.Dealer) (dealer.ImportResult, error) {
	t.Helper()
	_, res, err := dealer.Import(context.Background(), st, &fixture.Document{ConventionID: conv, Dealers: recs}, conv)
	return res, err
}

// events lists the waiting events' resources and clears the outbox.
func events(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var out []string
	for _, r := range outboxtest.Rows(t, pool) {
		out = append(out, r.Type+" "+r.Resource)
	}
	outboxtest.Clear(t, pool)
	return strings.Join(out, ",")
}

func appStatuses(d dealer.Dealer) string {
	var s []string
	for _, a := range d.Applications {
		s = append(s, fmt.Sprintf("%d:%s", a.ID, a.Status))
	}
	return strings.Join(s, ",")
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	st, pool := newStore(t)
	check := func(t *testing.T, res dealer.ImportResult, err error, ins, upd, same int64) {
		t.Helper()
		if err != nil || res != (dealer.ImportResult{Inserted: ins, Updated: upd, Unchanged: same}) {
			t.Fatalf("got %+v %v, want %d/%d/%d", res, err, ins, upd, same)
		}
	}
	t.Run("a first import inserts dealers and applications, one event each", func(t *testing.T) {
		res, err := load(t, st, "2026", rec(1, 1001, app(10, "pending"), app(11, "approved")), rec(2, 1002))
		check(t, res, err, 2, 0, 0)
		if got := events(t, pool); got != "dealer-updated dealer:2026:1,dealer-updated dealer:2026:2" {
			t.Fatalf("events %s", got)
		}
		d, err := st.Get(ctx, "2026", 1)
		if err != nil || appStatuses(d) != "10:pending,11:approved" {
			t.Fatalf("%+v %v", d, err)
		}
	})
	t.Run("the same file again changes nothing and writes no event", func(t *testing.T) {
		before, _ := st.Get(ctx, "2026", 1)
		res, err := load(t, st, "2026", rec(1, 1001, app(10, "pending"), app(11, "approved")), rec(2, 1002))
		check(t, res, err, 0, 0, 2)
		after, _ := st.Get(ctx, "2026", 1)
		if got := events(t, pool); got != "" || !after.UpdatedAt.Equal(before.UpdatedAt) ||
			!after.Applications[0].UpdatedAt.Equal(before.Applications[0].UpdatedAt) {
			t.Fatalf("events %q, updatedAt %v → %v", got, before.UpdatedAt, after.UpdatedAt)
		}
	})
	t.Run("a changed application makes its dealer updated", func(t *testing.T) {
		res, err := load(t, st, "2026", rec(1, 1001, app(10, "waitlisted"), app(11, "approved")), rec(2, 1002))
		check(t, res, err, 0, 1, 1)
		if got := events(t, pool); got != "dealer-updated dealer:2026:1" {
			t.Fatalf("events %s", got)
		}
	})
	t.Run("no applications list leaves them; an empty one removes those of the convention only", func(t *testing.T) {
		if _, err := load(t, st, "2025", rec(1, 1001, app(20, "cancelled"))); err != nil {
			t.Fatal(err)
		}
		events(t, pool)
		res, err := load(t, st, "2026", rec(1, 1001))
		check(t, res, err, 0, 0, 1)
		res, err = load(t, st, "2026", rec(1, 1001, app(11, "approved")))
		check(t, res, err, 0, 1, 0)
		d, _ := st.Get(ctx, "2026", 1)
		old, _ := st.Get(ctx, "2025", 1)
		if appStatuses(d) != "11:approved" || appStatuses(old) != "20:cancelled" {
			t.Fatalf("2026 %s, 2025 %s", appStatuses(d), appStatuses(old))
		}
		if got := events(t, pool); got != "dealer-updated dealer:2026:1" {
			t.Fatalf("events %s", got)
		}
	})
	t.Run("an application id stored for another dealer rejects the whole file", func(t *testing.T) {
		_, err := load(t, st, "2026", rec(3, 1003), rec(2, 1002, app(11, "pending")))
		if err == nil || !strings.Contains(err.Error(), "application 11 of dealer 2 is stored for dealer 1") {
			t.Fatalf("got %v", err)
		}
		if _, err := st.Get(ctx, "2026", 3); !errors.Is(err, dealer.ErrNotFound) {
			t.Fatalf("dealer 3 was stored: %v", err)
		}
		if got := events(t, pool); got != "" {
			t.Fatalf("events %s", got)
		}
	})
}

func TestOperatorsChanges(t *testing.T) {
	ctx := context.Background()
	st, pool := newStore(t)
	svc := dealer.NewService(st, nil, "2026")
	if _, err := load(t, st, "2026", rec(1, 1001, app(10, "pending"), app(11, "approved"))); err != nil {
		t.Fatal(err)
	}
	events(t, pool)
	t.Run("an allowed status change is stored with its event and a later updatedAt", func(t *testing.T) {
		before, _ := st.Get(ctx, "2026", 1)
		d, changed, err := svc.SetStatus(ctx, 10, "approved")
		if err != nil || !changed || appStatuses(d) != "10:approved,11:approved" {
			t.Fatalf("%+v %v %v", d, changed, err)
		}
		if !d.Applications[0].UpdatedAt.After(before.Applications[0].UpdatedAt) {
			t.Fatal("updatedAt did not move")
		}
		if got := events(t, pool); got != "dealer-updated dealer:2026:1" {
			t.Fatalf("events %s", got)
		}
	})
	t.Run("the same status again changes nothing and writes no event", func(t *testing.T) {
		if _, changed, err := svc.SetStatus(ctx, 10, "approved"); err != nil || changed {
			t.Fatalf("%v %v", changed, err)
		}
		if got := events(t, pool); got != "" {
			t.Fatalf("events %s", got)
		}
	})
	t.Run("refused changes change nothing", func(t *testing.T) {
		for _, tc := range []struct {
			do   func() error
			want error
		}{
			{func() error { _, _, err := svc.SetStatus(ctx, 10, "pending"); return err }, dealer.ErrCannotChangeStatus},
			{func() error { _, _, err := svc.SetStatus(ctx, 10, "paid"); return err }, dealer.ErrInvalid},
			{func() error { _, _, err := svc.SetStatus(ctx, 99, "approved"); return err }, dealer.ErrNotFound},
			{func() error { _, err := svc.DeleteApplication(ctx, 11); return err }, dealer.ErrCannotDelete},
			{func() error { _, err := svc.DeleteApplication(ctx, 99); return err }, dealer.ErrNotFound},
		} {
			if err := tc.do(); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		}
		d, _ := st.Get(ctx, "2026", 1)
		if appStatuses(d) != "10:approved,11:approved" {
			t.Fatalf("applications %s", appStatuses(d))
		}
		if got := events(t, pool); got != "" {
			t.Fatalf("events %s", got)
		}
	})
	t.Run("a cancelled application can be deleted, with its dealer's event", func(t *testing.T) {
		if _, _, err := svc.SetStatus(ctx, 11, "cancelled"); err != nil {
			t.Fatal(err)
		}
		events(t, pool)
		d, err := svc.DeleteApplication(ctx, 11)
		if err != nil || appStatuses(d) != "10:approved" {
			t.Fatalf("%+v %v", d, err)
		}
		if got := events(t, pool); got != "dealer-updated dealer:2026:1" {
			t.Fatalf("events %s", got)
		}
	})
}

// TestSearchPlansUseTheIndex: a page's reads are index scans from the
// cursor on, so a deep page costs what the first does.
func TestSearchPlansUseTheIndex(t *testing.T) {
	st, pool := newStore(t)
	// Enough rows that reading 100 dealers' applications by index beats a
	// scan of the table, written by SQL (an import of this size is slow).
	for _, sql := range []string{
		`INSERT INTO dealers (id, user_id, name, address_line1, address_city, address_zipcode, address_state, address_country)
		 SELECT i, 1000 + i % 500, 'D' || i, 'x', 'y', 'z', 's', 'US' FROM generate_series(1, 30000) i`,
		`INSERT INTO dealer_applications (id, dealer_id, convention_id, status, table_type, area_id, area_name)
		 SELECT i, i, '2026', 'pending', '{"id":"1","name":"t","paid":true,"displayName":null}', 1, 'Den' FROM generate_series(1, 30000) i`,
		`ANALYZE`,
	} {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]int64, 101)
	for i := range ids {
		ids[i] = int64(20000 + i)
	}
	for name, tc := range map[string]struct {
		sql  string
		args []any
	}{
		"search":          {dealerdb.SearchSQL, []any{int64(25000), 101}},
		"search by users": {dealerdb.SearchUsersSQL, []any{int64(10), 101, []int64{1001, 1200, 1499}}},
		"applications":    {dealerdb.ApplicationsSQL, []any{ids, "2026"}},
	} {
		t.Run(name+" reads an index", func(t *testing.T) {
			var kinds []string
			for _, n := range testkit.Explain(t, pool, tc.sql, tc.args...) {
				kinds = append(kinds, n.Kind)
			}
			joined := strings.Join(kinds, ",")
			if !strings.Contains(joined, "Index") || strings.Contains(joined, "Seq Scan") {
				t.Fatalf("plan: %s", joined)
			}
		})
	}
	t.Run("a page reads up to limit+1 dealers after the cursor", func(t *testing.T) {
		got, err := st.Search(context.Background(), "2026", nil, keyset.Seek{After: 29990, Limit: 5})
		if err != nil || len(got) != 6 || got[0].ID != 29991 || len(got[0].Applications) != 1 {
			t.Fatalf("%d %v", len(got), err)
		}
	})
}
