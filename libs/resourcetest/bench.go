package resourcetest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SearchDepth describes a benchmark of a search endpoint over generated rows.
type SearchDepth struct {
	Rows     string // what is generated, e.g. "registrations"
	Count    int64  // rows generated unless CountVar says otherwise
	CountVar string // environment variable that changes Count
	Path     string // the search endpoint
	Query    string // the cursor query name of the endpoint
	Scope    string // the scope the endpoint needs
}

// BenchmarkSearchDepth shows that a page deep in d.Count rows costs what the
// first page costs, and that a page of 100 makes exactly one users call. It
// runs only with VOLREG_BENCH_SCALE=1 (generation takes a while). start
// builds the service; generate fills its database with count rows of users
// 1..count.
func BenchmarkSearchDepth(b *testing.B, d SearchDepth, start func() *Env, generate func(ctx context.Context, count int64, progress io.Writer) error) {
	b.Helper()
	if os.Getenv("VOLREG_BENCH_SCALE") != "1" {
		b.Skip("set VOLREG_BENCH_SCALE=1 to generate " + thousands(d.Count) + " " + d.Rows + " and measure")
	}
	count := d.Count
	if s := os.Getenv(d.CountVar); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		count = n
	}
	e := start()
	e.Users.KnowEveryone()
	t0 := time.Now()
	var progress strings.Builder
	if err := generate(context.Background(), count, &progress); err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d %s in %s", count, d.Rows, time.Since(t0).Round(time.Millisecond))
	deep := e.codec.Encode(d.Query, nil, count-150) // the last full page
	token := e.Tokens.Service(b, d.Scope)
	bodies := map[string]string{"first": `{}`, "deep": `{"nextPage":"` + deep + `"}`}
	took := map[string]time.Duration{}
	// Warm both paths (connections, caches) before measuring.
	for _, body := range bodies {
		e.Post(b, d.Path, token, body)
	}
	e.Users.Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, name := range []string{"first", "deep"} {
			t0 := time.Now()
			r := e.Post(b, d.Path, token, bodies[name])
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
	fmt.Printf("%s: %d rows; first page %s, page at depth %d %s, ratio %.2f; users calls per page of 100: %.2f\n",
		d.Rows, count, first, count-150, deepAvg, ratio, perPage)
	if perPage != 1 {
		b.Fatalf("%.2f users calls per page, want exactly 1", perPage)
	}
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
