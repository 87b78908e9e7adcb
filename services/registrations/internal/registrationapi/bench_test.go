package registrationapi_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/cursor"
	"github.com/eventreg/eventreg/services/registrations/internal/registrationstore"
)

// BenchmarkSearchDepth shows that a page deep in 1,000,000 registrations
// costs what the first page costs, and that a page of 100 makes exactly one
// users call. It runs only with VOLREG_BENCH_SCALE=1 (generation takes a
// while); VOLREG_BENCH_REGISTRATIONS changes the count.
//
//	VOLREG_BENCH_SCALE=1 go test ./services/registrations/internal/registrationapi -run '^$' -bench SearchDepth -benchtime 200x
func BenchmarkSearchDepth(b *testing.B) {
	if os.Getenv("VOLREG_BENCH_SCALE") != "1" {
		b.Skip("set VOLREG_BENCH_SCALE=1 to generate 1,000,000 registrations and measure")
	}
	count := int64(1_000_000)
	if s := os.Getenv("VOLREG_BENCH_REGISTRATIONS"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		count = n
	}
	e := newEnv(b, envOptions{})
	e.Users.KnowEveryone()
	start := time.Now()
	var progress strings.Builder
	if _, err := e.Store.Generate(context.Background(), registrationstore.GenerateOptions{ConventionID: convention, Count: count,
		UsersFrom: 1, UsersTo: count, Progress: &progress}); err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d registrations in %s", count, time.Since(start).Round(time.Millisecond))
	codec, err := cursor.NewCodec([]byte(strings.Repeat("k", 32)))
	if err != nil {
		b.Fatal(err)
	}
	deep := codec.Encode("registrations.search", nil, count-150) // the last full page
	token := e.Tokens.Service(b, "registration:read")
	bodies := map[string]string{"first": `{}`, "deep": `{"nextPage":"` + deep + `"}`}
	took := map[string]time.Duration{}
	// Warm both paths (connections, caches) before measuring.
	for _, body := range bodies {
		e.search(b, token, body)
	}
	e.Users.Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, name := range []string{"first", "deep"} {
			t0 := time.Now()
			r := e.search(b, token, bodies[name])
			took[name] += time.Since(t0)
			if r.Status != 200 || !strings.Contains(string(r.Body), `"hasMore":true`) {
				b.Fatalf("%s page: %d %.200s", name, r.Status, r.Body)
			}
		}
	}
	b.StopTimer()
	calls := e.Users.Calls()
	for _, c := range calls {
		if len(c) != 100 {
			b.Fatalf("a users call asked for %d ids", len(c))
		}
	}
	perPage := float64(len(calls)) / float64(2*b.N)
	first, deepAvg := took["first"]/time.Duration(b.N), took["deep"]/time.Duration(b.N)
	ratio := float64(deepAvg) / float64(first)
	b.ReportMetric(float64(first.Microseconds()), "µs/first-page")
	b.ReportMetric(float64(deepAvg.Microseconds()), "µs/deep-page")
	b.ReportMetric(ratio, "deep/first")
	b.ReportMetric(perPage, "users-calls/page")
	fmt.Printf("registrations: %d rows; first page %s, page at depth %d %s, ratio %.2f; users calls per page of 100: %.2f\n",
		count, first, count-150, deepAvg, ratio, perPage)
	if perPage != 1 {
		b.Fatalf("%.2f users calls per page, want exactly 1", perPage)
	}
}
