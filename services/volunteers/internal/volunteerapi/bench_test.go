package volunteerapi_test

import (
	"context"
	"io"
	"testing"

	"github.com/eventreg/eventreg/libs/bulkload"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/volunteers/internal/volunteer/volunteerdb"
)

// BenchmarkSearchDepth compares a search page deep in 200,000 volunteers with the
// first one (see resourcetest.BenchmarkSearchDepth); VOLREG_BENCH_VOLUNTEERS
// changes the count.
//
//	VOLREG_BENCH_SCALE=1 go test ./services/volunteers/internal/volunteerapi -run '^$' -bench SearchDepth -benchtime 200x
func BenchmarkSearchDepth(b *testing.B) {
	var e *env
	resourcetest.BenchmarkSearchDepth(b, resourcetest.SearchDepth{Rows: "volunteers", Count: 200_000, CountVar: "VOLREG_BENCH_VOLUNTEERS",
		Path: "/api/v0/volunteers/search", Query: "volunteers.search", Scope: "volunteer:read"},
		func() *resourcetest.Env { e = newEnv(b, envOptions{}); return e.Env },
		func(ctx context.Context, count int64, progress io.Writer) error {
			_, err := e.Store.Generate(ctx, volunteerdb.GenerateOptions{Departments: 40,
				Users: bulkload.Users{ConventionID: convention, Count: count, UsersFrom: 1, UsersTo: count, Progress: progress}})
			return err
		})
}
