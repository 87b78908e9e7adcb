// Package microbench runs the hot-path micro-benchmarks (`go test -bench`) of the tree and reads their results.
package microbench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"golang.org/x/tools/benchmark/parse"

	"github.com/eventreg/eventreg/bench/internal/report"
)

// Bench is a set of benchmarks of one package.
type Bench struct {
	Package string // relative to the repository root, e.g. ./libs/cursor
	Pattern string // -bench regexp
}

// HotPaths are the micro-benchmarks of the performance issue: token signing,
// token validation (cold and cached), cursor encode/decode and the JSON of a
// page of 100 registrations.
var HotPaths = []Bench{
	{"./services/auth/internal/accesstoken", "^BenchmarkIssue$"},
	{"./libs/tokenauth", "^Benchmark(ValidateCold|ValidateCached)$"},
	{"./libs/cursor", "^Benchmark(Encode|Decode)$"},
	{"./services/registrations/internal/registrationapi", "^BenchmarkRenderSearchPage$"},
}

// Run runs each set with `go test -run ^$ -bench ... -benchmem` in root.
// A set that fails is reported in errs and does not stop the others.
func Run(ctx context.Context, root string, sets []Bench, benchtime time.Duration) (out []report.Micro, errs []error) {
	for _, b := range sets {
		cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", b.Pattern, "-benchmem", "-benchtime", benchtime.String(), b.Package)
		cmd.Dir = root
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		results, perr := Parse(b.Package, buf.Bytes())
		out = append(out, results...)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("go test -bench %s %s: %v\n%s", b.Pattern, b.Package, err, tail(buf.String(), 20)))
		case perr != nil:
			errs = append(errs, perr)
		case len(results) == 0:
			errs = append(errs, fmt.Errorf("go test -bench %s %s: no benchmark ran\n%s", b.Pattern, b.Package, tail(buf.String(), 20)))
		}
	}
	return out, errs
}

var cpuSuffix = regexp.MustCompile(`-\d+$`)

// Parse reads the benchmark lines of `go test -bench` output.
func Parse(pkg string, output []byte) ([]report.Micro, error) {
	set, err := parse.ParseSet(bytes.NewReader(output))
	if err != nil {
		return nil, fmt.Errorf("reading benchmark output of %s: %w", pkg, err)
	}
	var out []report.Micro
	for _, runs := range set {
		for _, b := range runs {
			name := cpuSuffix.ReplaceAllString(strings.TrimPrefix(b.Name, "Benchmark"), "")
			out = append(out, report.Micro{Package: strings.TrimPrefix(pkg, "./"), Name: name, NsPerOp: b.NsPerOp,
				BytesPerOp: int64(b.AllocedBytesPerOp), AllocsPerOp: int64(b.AllocsPerOp)})
		}
	}
	sortMicro(out)
	return out, nil
}

func sortMicro(m []report.Micro) {
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && m[j].Name < m[j-1].Name; j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
