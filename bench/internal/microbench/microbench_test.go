package microbench_test

import (
	"testing"

	"github.com/eventreg/eventreg/bench/internal/microbench"
)

func TestParseGoTestBenchOutput(t *testing.T) {
	out := []byte(`goos: linux
goarch: amd64
pkg: github.com/eventreg/eventreg/libs/tokenauth
cpu: AMD EPYC 7B13
BenchmarkValidateCold-2     	   20466	     58123 ns/op	    9456 B/op	     142 allocs/op
BenchmarkValidateCached-2   	 1000000	      1043 ns/op	     160 B/op	       3 allocs/op
PASS
ok  	github.com/eventreg/eventreg/libs/tokenauth	3.1s
`)
	got, err := microbench.Parse("./libs/tokenauth", out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d results, want 2: %+v", len(got), got)
	}
	c := got[0]
	if c.Name != "ValidateCached" || c.Package != "libs/tokenauth" || c.NsPerOp != 1043 || c.BytesPerOp != 160 || c.AllocsPerOp != 3 {
		t.Fatalf("first result (sorted by name) %+v", c)
	}
	if got[1].Name != "ValidateCold" || got[1].NsPerOp != 58123 {
		t.Fatalf("second result %+v", got[1])
	}
}

func TestParseOutputWithoutBenchmarks(t *testing.T) {
	got, err := microbench.Parse("./x", []byte("PASS\nok  x 0.1s\n"))
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v", got, err)
	}
}
