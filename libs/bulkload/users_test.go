package bulkload_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/bulkload"
)

// noDB fails the test if Generate gets as far as the database.
type noDB struct{ t *testing.T }

func (d noDB) Begin(context.Context) (pgx.Tx, error) {
	d.t.Fatal("Generate began a transaction for numbers it should refuse")
	return nil, nil
}

func TestGenerateRefusesBadNumbers(t *testing.T) {
	cases := []struct {
		name string
		p    bulkload.PerUser
		want string
	}{
		{"no rows", bulkload.PerUser{Table: "things", Users: bulkload.Users{Count: 0, UsersFrom: 1, UsersTo: 9}, Need: "--things >= 1"}, "generate: need --things >= 1"},
		{"users from zero", bulkload.PerUser{Table: "things", Users: bulkload.Users{Count: 1, UsersFrom: 0, UsersTo: 9}, Need: "--things >= 1"}, "generate: need --things >= 1"},
		{"fewer users than rows", bulkload.PerUser{Table: "things", Users: bulkload.Users{Count: 10, UsersFrom: 1, UsersTo: 9}, Need: "x"},
			"generate: users 1..9 are 9 ids, fewer than the 10 things asked for (one per user)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bulkload.Generate(context.Background(), noDB{t}, tc.p, nil)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}

func TestUserIDSpreadsRowsOverTheRange(t *testing.T) {
	p := bulkload.Users{Count: 4, UsersFrom: 101, UsersTo: 108}
	var got []int64
	for i := range p.Count {
		got = append(got, p.UserID(i))
	}
	if want := []int64{101, 103, 105, 107}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("got %v, want %v", got, want)
	}
}
