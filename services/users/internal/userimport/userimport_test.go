package userimport_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventreg/eventreg/libs/fixture"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/userimport"
	"github.com/eventreg/eventreg/services/users/internal/userimport/userimportdb"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func load(t *testing.T, pool *pgxpool.Pool, doc *fixture.Document) (userimport.Stats, error) {
	t.Helper()
	return userimport.Import(context.Background(), userimportdb.New(pool), doc, usertest.ConventionID, usertest.Fast, nil, nil)
}

func count(t *testing.T, pool *pgxpool.Pool, q string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestImportIsIdempotent(t *testing.T) {
	pool, _ := usertest.NewPool(t)
	st, err := load(t, pool, usertest.Demo(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.UsersInserted != 5 || st.RolesInserted != 5 || st.PasswordsHashed != 5 || st.MembershipsAdded != 8 {
		t.Fatalf("first import: %+v", st)
	}
	var hashBefore string
	_ = pool.QueryRow(context.Background(), `SELECT password_hash FROM users WHERE id = 1001`).Scan(&hashBefore)

	t.Run("a second import changes nothing and hashes no password", func(t *testing.T) {
		st, err := load(t, pool, usertest.Demo(t))
		if err != nil {
			t.Fatal(err)
		}
		want := userimport.Stats{RolesUnchanged: 5, UsersUnchanged: 5}
		if st != want {
			t.Fatalf("second import: %+v", st)
		}
		var hashAfter string
		_ = pool.QueryRow(context.Background(), `SELECT password_hash FROM users WHERE id = 1001`).Scan(&hashAfter)
		if hashAfter != hashBefore || !strings.HasPrefix(hashAfter, "$argon2id$") {
			t.Fatal("the stored hash changed")
		}
	})
	t.Run("a changed record is updated in place", func(t *testing.T) {
		doc := usertest.Demo(t)
		doc.Users[1].FirstName = "Bobby"
		doc.Users[1].Roles = append(doc.Users[1].Roles, fixture.RoleGrant{ID: 2, Scope: "convention"})
		newPw := "a brand new password"
		doc.Users[2].Password = &newPw
		doc.Roles[4].Permissions = []string{"con:read"}
		st, err := load(t, pool, doc)
		if err != nil {
			t.Fatal(err)
		}
		if st.UsersUpdated != 2 || st.UsersUnchanged != 3 || st.RolesUpdated != 1 || st.MembershipsAdded != 1 || st.PasswordsHashed != 1 {
			t.Fatalf("stats %+v", st)
		}
		if n := count(t, pool, `SELECT count(*) FROM users WHERE id = 1002 AND first_name = 'Bobby'`); n != 1 {
			t.Fatal("not updated")
		}
	})
	t.Run("memberships are replaced by the file's list", func(t *testing.T) {
		doc := usertest.Demo(t)
		doc.Users[0].Roles = []fixture.RoleGrant{{ID: 2, Scope: "global"}}
		st, err := load(t, pool, doc)
		if err != nil {
			t.Fatal(err)
		}
		if n := count(t, pool, `SELECT count(*) FROM role_members WHERE user_id = 1001`); n != 1 || st.MembershipsRemoved < 2 {
			t.Fatalf("memberships of 1001: %d, stats %+v", n, st)
		}
	})
}

func TestImportRejectsBadFilesWhole(t *testing.T) {
	pool, _ := usertest.NewPool(t)
	cases := []struct {
		name   string
		change func(doc *fixture.Document)
		want   []string
	}{
		{"bad email and date", func(d *fixture.Document) {
			d.Users[1].Email = "not-an-email"
			d.Users[3].BornAt = "1990-13-45"
		}, []string{"users[1] (id 1002): email:", "users[3] (id 1004): bornAt:"}},
		{"duplicate ids and emails", func(d *fixture.Document) {
			d.Users[2].ID = 1001
			d.Users[4].Email = "ALICE@example.org"
		}, []string{"users[2] (id 1001): id: appears twice", `users[4] (id 1005): email: "ALICE@example.org" is also the email of user 1001`}},
		{"unknown role and bad scope", func(d *fixture.Document) {
			d.Users[0].Roles = []fixture.RoleGrant{{ID: 99, Scope: "global"}, {ID: 2, Scope: "forever"}}
		}, []string{`users[0] (id 1001): roles[1]: scope: must be global or convention, not "forever"`}},
		{"short password and bad phone", func(d *fixture.Document) {
			pw := "short"
			d.Users[0].Password = &pw
			phone := "555-1234"
			d.Users[1].Phone = &phone
		}, []string{"users[0] (id 1001): password:", "users[1] (id 1002): phone:"}},
		{"role problems", func(d *fixture.Document) {
			d.Roles[1].Name = "admin"
			d.Roles[2].Permissions = []string{"has space"}
		}, []string{`roles[1] (id 2): name: "admin" is also the name of role 1`, "roles[2] (id 3): permissions[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := usertest.Demo(t)
			tc.change(doc)
			_, err := load(t, pool, doc)
			if !userimport.IsRejected(err) {
				t.Fatalf("want a rejection, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "correct horse") {
				t.Error("a password appears in the error")
			}
			if n := count(t, pool, `SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM roles)`); n != 0 {
				t.Fatalf("%d rows stored", n)
			}
		})
	}
	t.Run("a role unknown to the file and the database, found in the transaction", func(t *testing.T) {
		doc := usertest.Demo(t)
		doc.Users[0].Roles = []fixture.RoleGrant{{ID: 99, Scope: "global"}}
		_, err := load(t, pool, doc)
		if !userimport.IsRejected(err) || !strings.Contains(err.Error(), "user 1001: roles: role 99 is neither in the file nor stored") {
			t.Fatalf("got %v", err)
		}
		if n := count(t, pool, `SELECT count(*) FROM users`); n != 0 {
			t.Fatalf("%d users stored", n)
		}
	})
}

func TestImportRefusesClashesWithStoredUsers(t *testing.T) {
	pool, _ := usertest.NewPool(t)
	if _, err := load(t, pool, usertest.Demo(t)); err != nil {
		t.Fatal(err)
	}
	doc := &fixture.Document{Users: []fixture.User{{ID: 2000, Username: "ALICE", Email: "new@example.org",
		FirstName: "A", LastName: "B", BornAt: "2000-01-01"}}}
	_, err := load(t, pool, doc)
	if !userimport.IsRejected(err) || !strings.Contains(err.Error(), `user 2000: username: "ALICE" is already used by stored user 1001`) {
		t.Fatalf("got %v", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM users WHERE id = 2000`); n != 0 {
		t.Fatal("stored")
	}
}

func TestConventionScopedMembershipsNeedAConvention(t *testing.T) {
	pool, _ := usertest.NewPool(t)
	doc := usertest.Demo(t)
	doc.ConventionID = ""
	_, err := userimport.Import(context.Background(), userimportdb.New(pool), doc, "", usertest.Fast, nil, nil)
	if !userimport.IsRejected(err) || !strings.Contains(err.Error(), "scope: convention needs conventionId") {
		t.Fatalf("got %v", err)
	}
	t.Run("the file's convention wins over the default", func(t *testing.T) {
		doc := usertest.Demo(t)
		doc.ConventionID = "2030"
		if _, err := userimport.Import(context.Background(), userimportdb.New(pool), doc, "2026", usertest.Fast, nil, nil); err != nil {
			t.Fatal(err)
		}
		if n := count(t, pool, `SELECT count(*) FROM role_members WHERE convention_id = '2030'`); n != 3 {
			t.Fatalf("%d memberships for 2030", n)
		}
	})
}

func TestGenerate(t *testing.T) {
	pool, _ := usertest.NewPool(t)
	usertest.LoadDemo(t, pool)
	var progress strings.Builder
	res, err := userimport.Generate(context.Background(), userimportdb.New(pool), userimport.GenerateOptions{
		Users: 2500, Roles: 10, Seed: 3, ConventionID: "2026", ChunkSize: 1000, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstUserID != userimport.FirstGeneratedID || res.LastUserID != userimport.FirstGeneratedID+2499 || res.FirstRoleID != 6 || res.LastRoleID != 15 {
		t.Fatalf("result %+v", res)
	}
	if n := count(t, pool, `SELECT count(*) FROM users WHERE id >= $1`, userimport.FirstGeneratedID); n != 2500 {
		t.Fatalf("%d users", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM role_members WHERE role_id >= 6`); int64(n) != res.Memberships || n < 2500 {
		t.Fatalf("%d memberships, result says %d", n, res.Memberships)
	}
	if !strings.Contains(progress.String(), "users: 1000/2500") || !strings.Contains(progress.String(), "users: 2500/2500") {
		t.Fatalf("progress:\n%s", progress.String())
	}
	t.Run("a second run goes above the first", func(t *testing.T) {
		res2, err := userimport.Generate(context.Background(), userimportdb.New(pool), userimport.GenerateOptions{Users: 10, Roles: 1, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res2.FirstUserID != res.LastUserID+1 || res2.FirstRoleID != res.LastRoleID+1 {
			t.Fatalf("second result %+v", res2)
		}
	})
}

func TestPasswordsOfTheImportVerify(t *testing.T) {
	pool, _ := usertest.NewPool(t)
	if _, err := userimport.Import(context.Background(), userimportdb.New(pool), usertest.Demo(t), "2026", usertest.Fast, nil, nil); err != nil {
		t.Fatal(err)
	}
	var h string
	if err := pool.QueryRow(context.Background(), `SELECT password_hash FROM users WHERE id = 1002`).Scan(&h); err != nil {
		t.Fatal(err)
	}
	if ok, err := password.Verify("bob demo password 2026", h); err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM users WHERE password_hash LIKE '%demo password%'`); n != 0 {
		t.Fatal("a password is stored as given")
	}
}
