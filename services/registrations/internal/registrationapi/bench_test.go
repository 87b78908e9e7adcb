package registrationapi_test

import (
	"context"
	"io"
	"testing"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/registrations/internal/registration/registrationdb"
)

// BenchmarkSearchDepth compares a search page deep in 1,000,000 registrations with the
// first one (see resourcetest.BenchmarkSearchDepth); VOLREG_BENCH_REGISTRATIONS
// changes the count.
//
//	VOLREG_BENCH_SCALE=1 go test ./services/registrations/internal/registrationapi -run '^$' -bench SearchDepth -benchtime 200x
func BenchmarkSearchDepth(b *testing.B) {
	var e *env
	resourcetest.BenchmarkSearchDepth(b, resourcetest.SearchDepth{Rows: "registrations", Count: 1_000_000, CountVar: "VOLREG_BENCH_REGISTRATIONS",
		Path: "/api/v0/registration/search", Query: "registrations.search", Scope: "registration:read"},
		func() *resourcetest.Env { e = newEnv(b, envOptions{}); return e.Env },
		func(ctx context.Context, count int64, progress io.Writer) error {
			_, err := e.Store.Generate(ctx, registrationdb.GenerateOptions{ConventionID: convention, Count: count,
				UsersFrom: 1, UsersTo: count, Progress: progress})
			return err
		})
}
