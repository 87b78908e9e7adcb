package load

import (
	"bytes"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLuaStringEscapesEverythingButPrintableASCII(t *testing.T) {
	cases := map[string]string{
		``:                   `""`,
		`Bearer abc`:         `"Bearer abc"`,
		`a"b`:                `"a\034b"`,
		`a\b`:                `"a\092b"`,
		"]]\r\n[==[":         `"]]\013\010[==["`,
		"\x00é1":             `"\000\195\1691"`, // a digit after an escape stays a digit
		`it's [[long]] \"x"`: `"it's [[long]] \092\034x\034"`,
	}
	for in, want := range cases {
		if got := luaString(in); got != want {
			t.Errorf("luaString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestRenderedScriptHoldsTheRequestsEscaped(t *testing.T) {
	r := &Request{Base: "http://127.0.0.1:8080", Method: "POST", Path: "/api/v0/users/search",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"limit":100}`), Authorizations: []string{`Bearer "x"`, `Bearer y`}}
	var b bytes.Buffer
	if err := renderScript(&b, r, 2, 7, "/tmp/result.json"); err != nil {
		t.Fatal(err)
	}
	script := b.String()
	for _, want := range []string{
		`local head = "POST /api/v0/users/search"`,
		`" HTTP/1.1\013\010Host: 127.0.0.1:8080\013\010Content-Type: application/json\013\010Authorization: Bearer \034x\034\013\010Content-Length: 13\013\010\013\010{\034limit\034:100}",`,
		`local ids_from, ids_count = 0, 0`,
		`local threads, seed = 2, 7`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %s:\n%s", want, script)
		}
	}
}

func TestValidateRefusesWhatWouldBreakTheRequest(t *testing.T) {
	ok := func() *Request {
		return &Request{Base: "http://127.0.0.1:8080", Method: "GET", Path: "/x", Authorizations: []string{"Bearer t"}}
	}
	if err := ok().validate(); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	cases := map[string]func(*Request){
		"CR LF in a token":          func(r *Request) { r.Authorizations = []string{"Bearer t\r\nX-Evil: 1"} },
		"LF in a header":            func(r *Request) { r.Header = http.Header{"X": {"a\nb"}} },
		"Host set by hand":          func(r *Request) { r.Header = http.Header{"Host": {"h"}} },
		"Path and PathPrefix":       func(r *Request) { r.PathPrefix, r.IDs = "/y/", IDRange{1, 2} },
		"prefix without ids":        func(r *Request) { r.Path, r.PathPrefix = "", "/y/" },
		"space in the path":         func(r *Request) { r.Path = "/x y" },
		"relative path":             func(r *Request) { r.Path = "x" },
		"base with a path":          func(r *Request) { r.Base = "http://127.0.0.1:8080/api" },
		"method with a space":       func(r *Request) { r.Method = "GET /" },
		"ids beyond Lua's integers": func(r *Request) { r.Path, r.PathPrefix, r.IDs = "", "/y/", IDRange{1e15, 2} },
	}
	for name, mutate := range cases {
		r := ok()
		mutate(r)
		if err := r.validate(); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestThreadsDivideTheConnectionsEvenly(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 1, 4: 2, 16: 2, 17: 1, 64: 2} {
		if got := wrkThreads(n); got != want || n%got != 0 {
			t.Errorf("wrkThreads(%d) = %d, want %d", n, got, want)
		}
	}
}

// correct is wrk 4.1's stats_correct (src/stats.c) over a dense histogram.
func correct(data []int64, expected int64) {
	for n := 2 * expected; n < int64(len(data)); n++ {
		count := data[n]
		for m := n - expected; count > 0 && m > expected; m -= expected {
			data[m] += count
		}
	}
}

func TestMeasuredLatenciesUndoWrksCorrection(t *testing.T) {
	// 1,000 requests over 4 connections in 1 s: e = 1,000,000 / 250 = 4,000 µs.
	orig := make([]int64, 30_001)
	orig[500], orig[900], orig[3_000], orig[4_000], orig[8_000], orig[8_001], orig[12_345], orig[30_000] = 700, 200, 40, 30, 10, 10, 5, 5
	var requests int64
	for _, c := range orig {
		requests += c
	}
	corrected := append([]int64(nil), orig...)
	correct(corrected, 4_000)
	res := wrkResult{Requests: requests, DurationUS: 1_000_000}
	var total int64
	for v, c := range corrected {
		if c > 0 {
			res.Latency = append(res.Latency, [2]int64{int64(v), c})
			total += c
		}
	}
	if total <= requests {
		t.Fatalf("the correction added nothing (%d samples): the test proves nothing", total)
	}
	pairs, missing, err := measuredLatencies(res, 4)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for _, p := range pairs {
		got[p[0]] = p[1]
	}
	want := map[int64]int64{}
	for v, c := range orig {
		if c > 0 {
			want[int64(v)] = c
		}
	}
	if !maps.Equal(got, want) || missing != 0 {
		t.Fatalf("got %v (missing %d), want %v", got, missing, want)
	}
}

func TestMeasuredLatenciesCountAnswersAfterTheTimeoutAsMissing(t *testing.T) {
	// Nothing slow enough to be corrected; 3 answers came after the timeout.
	res := wrkResult{Requests: 103, DurationUS: 1_000_000, Latency: [][2]int64{{100, 60}, {200, 40}}}
	res.Errors.Timeout = 3
	pairs, missing, err := measuredLatencies(res, 1)
	if err != nil || missing != 3 || len(pairs) != 2 {
		t.Fatalf("pairs %v missing %d err %v, want the 2 pairs and 3 missing", pairs, missing, err)
	}
	out, err := res.outcome(1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if out.Latencies.Count() != 103 || out.Latencies.Max() < 10*time.Second-10*time.Millisecond {
		t.Fatalf("count %d max %s: the late answers belong at the timeout", out.Latencies.Count(), out.Latencies.Max())
	}
}

func TestMeasuredLatenciesRefuseAnUnknownHistogram(t *testing.T) {
	// More samples than requests, but not wrk's correction (a count at v+e
	// larger than at v).
	res := wrkResult{Requests: 10, DurationUS: 1_000, Latency: [][2]int64{{200, 1}, {300, 9}, {400, 5}}}
	if _, _, err := measuredLatencies(res, 1); err == nil { // e = 100 µs
		t.Fatal("want an error")
	}
}

const sampleResult = `{"requests":1200,"duration_us":1000000,"bytes":98765,` +
	`"errors":{"connect":0,"read":2,"write":0,"status":120,"timeout":0},"latency_us":[[150,1000],[900,150],[5000,50]]}
`

func TestParseWrkResult(t *testing.T) {
	r, err := parseWrkResult([]byte(sampleResult))
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 1200 || r.DurationUS != 1_000_000 || r.Bytes != 98765 || r.Errors.Read != 2 || r.Errors.Status != 120 || len(r.Latency) != 3 || r.Latency[2] != [2]int64{5000, 50} {
		t.Fatalf("parsed %+v", r)
	}
	for _, bad := range []string{"", "Running 1s test @ http://x/", `{"requests":1,"surprise":2}`, `{"requests":-1}`, `{"latency_us":[[1]]}`} {
		if _, err := parseWrkResult([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestMergeAddsWrkOutcomes(t *testing.T) {
	r, err := parseWrkResult([]byte(sampleResult))
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.outcome(16, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a.FirstError = "wrk: 120 answers were not 2xx/3xx; a probe got: 500"
	if a.Errors != 122 || a.Statuses["non-2xx/3xx"] != 120 || a.Statuses["socket read"] != 2 || a.Statuses["2xx/3xx"] != 1080 {
		t.Fatalf("outcome %+v", a)
	}
	b, err := wrkResult{Requests: 600, DurationUS: 500_000, Latency: [][2]int64{{150, 600}}}.outcome(16, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m := Merge(Merge(Outcome{}, b), a)
	if m.Requests != 1800 || m.Errors != 122 || m.Statuses["2xx/3xx"] != 1680 || m.Elapsed != 1500*time.Millisecond || m.FirstError != a.FirstError {
		t.Fatalf("merged %+v", m)
	}
	if m.Latencies.Count() != 1800 || m.Latencies.Quantile(50) > 151*time.Microsecond || m.Latencies.Max() < 4990*time.Microsecond {
		t.Fatalf("merged latencies: count %d p50 %s max %s", m.Latencies.Count(), m.Latencies.Quantile(50), m.Latencies.Max())
	}
}
