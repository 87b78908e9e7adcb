package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/page/keyset"
	"github.com/eventreg/eventreg/libs/testkit"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
	"github.com/eventreg/eventreg/services/users/internal/userimport"
	"github.com/eventreg/eventreg/services/users/internal/userimport/userimportdb"
	"github.com/eventreg/eventreg/services/users/internal/usertest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// BenchmarkSearchDepth shows that a page of the user search costs the same
// deep in the result as at its start (keyset pagination on indexes). It loads
// USERS_BENCH_USERS users (default 1,000,000) and 100 roles with the data
// generator, then times pages of 100 at the start and at depth 90% (900,000
// for the default), without a filter and with roleId, and prints the ratios.
// It is slow (the load takes minutes): it runs only with USERS_BENCH_SCALE=1.
//
//	USERS_BENCH_SCALE=1 go test -run '^$' -bench SearchDepth -benchtime 200x ./services/users/
func BenchmarkSearchDepth(b *testing.B) {
	if os.Getenv("USERS_BENCH_SCALE") != "1" {
		b.Skip("set USERS_BENCH_SCALE=1 to load 1,000,000 users and compare page costs")
	}
	n := 1_000_000
	if s := os.Getenv("USERS_BENCH_USERS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1000 {
			b.Fatalf("USERS_BENCH_USERS=%q: want a number >= 1000", s)
		}
	}
	ctx := context.Background()
	pool, _ := usertest.NewPool(b)
	start := time.Now()
	gen, err := userimport.Generate(ctx, userimportdb.New(pool), userimport.GenerateOptions{
		Users: n, Roles: 100, Seed: 1, ConventionID: usertest.ConventionID, Progress: os.Stderr, ChunkSize: 100_000})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d users, %d memberships in %v", n, gen.Memberships, time.Since(start).Round(time.Second))
	store := userdb.New(pool)
	depth := int64(n) * 9 / 10
	deepKey := gen.FirstUserID + depth - 1
	role := user.Filter{RoleID: gen.FirstRoleID + 41}

	page := func(f user.Filter, after int64) func() {
		return func() {
			rows, err := store.Search(ctx, f, usertest.ConventionID, keyset.Seek{After: after, Limit: 100})
			if err != nil || len(rows) != 101 {
				b.Fatalf("page after %d: %d rows, %v", after, len(rows), err)
			}
		}
	}
	cases := []struct {
		name string
		f    user.Filter
	}{{"all", user.Filter{}}, {"roleId", role}}
	for _, c := range cases {
		first, deep := page(c.f, 0), page(c.f, deepKey)
		b.Run(c.name+"/first-page", func(b *testing.B) {
			for b.Loop() {
				first()
			}
		})
		b.Run(fmt.Sprintf("%s/depth-%d", c.name, depth), func(b *testing.B) {
			for b.Loop() {
				deep()
			}
		})
		tf, td := median(first, 300), median(deep, 300)
		ratio := float64(td) / float64(tf)
		fmt.Printf("search %-6s: first page %v, page at depth %d %v, ratio %.2f (target <= 1.2)\n", c.name, tf, depth, td, ratio)
		b.ReportMetric(ratio, c.name+"-depth-ratio")
	}
}

// median times f runs times (after a warm-up) and returns the median.
func median(f func(), runs int) time.Duration {
	for range 20 {
		f()
	}
	d := make([]time.Duration, runs)
	for i := range d {
		s := time.Now()
		f()
		d[i] = time.Since(s)
	}
	slices.Sort(d)
	return d[runs/2]
}
