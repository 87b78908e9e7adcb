package load

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
)

// Request is the shape of every request of a stateless load, which wrk sends
// (docs/performance.md, "How it measures"): the same method, headers and
// body each time, a fixed path or a path ending in a random id, and each
// request carrying the next of Authorizations.
type Request struct {
	Base   string // scheme://host:port of the system under test
	Method string
	// Path is the request target of every request; or PathPrefix, followed
	// by an id of IDs picked uniformly at random for each request.
	Path       string
	PathPrefix string
	IDs        IDRange
	Header     http.Header // static headers (not Host, Authorization or Content-Length)
	Body       []byte
	// Authorizations are Authorization header values taken in turn (none:
	// no Authorization header).
	Authorizations []string
}

// IDRange is the ids From ... From+Count-1.
type IDRange struct{ From, Count int64 }

// wrkMissing is what to do when wrk is not installed.
const wrkMissing = "install wrk (Debian: apt-get install wrk)"

// EnsureWrk checks that wrk is on PATH; when it is not and this runs as root
// on a system with apt-get, it installs Debian's package, saying so on
// progress.
func EnsureWrk(ctx context.Context, progress io.Writer) error {
	if _, err := exec.LookPath("wrk"); err == nil {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		return errors.New("wrk is not on PATH: " + wrkMissing)
	}
	fmt.Fprintln(progress, "wrk is not on PATH: installing it from Debian's packages (apt-get install -y wrk) ...")
	install := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, lastLines(out, 5))
		}
		return nil
	}
	err := install("install", "-y", "-qq", "--no-install-recommends", "wrk")
	if err != nil { // an image without package lists: fetch them once
		if err = install("update", "-qq"); err == nil {
			err = install("install", "-y", "-qq", "--no-install-recommends", "wrk")
		}
	}
	if err != nil {
		return fmt.Errorf("installing wrk: %w; %s", err, wrkMissing)
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("apt-get installed wrk but it is not on PATH: " + wrkMissing)
	}
	return nil
}

// wrkThreads is how many threads wrk runs for n connections: two (each with
// its own Lua state and event loop; the machine has two cores), or one when
// n is odd, because wrk gives every thread n/threads connections and would
// otherwise open fewer than n.
func wrkThreads(n int) int {
	if n >= 2 && n%2 == 0 {
		return 2
	}
	return 1
}

// validate refuses what would make a malformed or smuggled HTTP request.
func (r *Request) validate() error {
	u, err := url.Parse(r.Base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("base %q: want scheme://host:port", r.Base)
	}
	if r.Method == "" || strings.ContainsFunc(r.Method, func(c rune) bool { return c <= ' ' || c >= 0x7f }) {
		return fmt.Errorf("method %q", r.Method)
	}
	if (r.Path == "") == (r.PathPrefix == "") {
		return errors.New("set exactly one of Path and PathPrefix")
	}
	if r.PathPrefix != "" && (r.IDs.Count < 1 || r.IDs.From < 0 || r.IDs.From+r.IDs.Count > 1e14) {
		return fmt.Errorf("ids %+v: want a count of at least 1 within 0 ... 1e14", r.IDs)
	}
	target := r.Path + r.PathPrefix
	if !strings.HasPrefix(target, "/") || strings.ContainsFunc(target, func(c rune) bool { return c <= ' ' || c >= 0x7f }) {
		return fmt.Errorf("path %q: want an absolute path without spaces or control characters", target)
	}
	badValue := func(v string) bool { return strings.ContainsAny(v, "\r\n\x00") }
	for k, vs := range r.Header {
		if k == "" || strings.ContainsFunc(k, func(c rune) bool { return c <= ' ' || c >= 0x7f || c == ':' }) {
			return fmt.Errorf("header name %q", k)
		}
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Authorization", "Content-Length":
			return fmt.Errorf("header %s is set by the runner", k)
		}
		if slices.ContainsFunc(vs, badValue) {
			return fmt.Errorf("header %s: a value holds CR, LF or NUL", k)
		}
	}
	if slices.ContainsFunc(r.Authorizations, badValue) {
		return errors.New("an Authorization value holds CR, LF or NUL")
	}
	return nil
}

// rawRequest returns the request line's start (method and path, or path
// prefix) and, per Authorization value, the rest of the request from the
// space before "HTTP/1.1" to the end of the body.
func (r *Request) rawRequest() (head string, tails []string) {
	u, _ := url.Parse(r.Base) // validated
	var common strings.Builder
	common.WriteString(" HTTP/1.1\r\nHost: " + u.Host + "\r\n")
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		for _, v := range r.Header[k] {
			common.WriteString(k + ": " + v + "\r\n")
		}
	}
	end := "\r\n" + string(r.Body)
	switch {
	case len(r.Body) > 0, r.Method == http.MethodPost, r.Method == http.MethodPut, r.Method == http.MethodPatch:
		end = "Content-Length: " + strconv.Itoa(len(r.Body)) + "\r\n" + end
	}
	auths := r.Authorizations
	if len(auths) == 0 {
		return r.Method + " " + r.Path + r.PathPrefix, []string{common.String() + end}
	}
	for _, a := range auths {
		tails = append(tails, common.String()+"Authorization: "+a+"\r\n"+end)
	}
	return r.Method + " " + r.Path + r.PathPrefix, tails
}

// luaString quotes s as a Lua string literal read back byte for byte by any
// Lua: printable ASCII as it is, everything else (quotes, backslashes, CR,
// LF, bytes from 0x80) as a three-digit decimal escape. Long brackets would
// not do: Lua turns the CR LF of an HTTP request in them into LF.
func luaString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := range len(s) {
		c := s[i]
		if c >= ' ' && c < 0x7f && c != '"' && c != '\\' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// loadEnded is the line the script writes to stderr when the load stops;
// it then waits for a line on stdin before reading out the histogram.
const loadEnded = "bench: load ended"

//go:embed wrk.lua.tmpl
var wrkScriptText string

var wrkScript = template.Must(template.New("wrk.lua").Funcs(template.FuncMap{"lua": luaString}).Parse(wrkScriptText))

type scriptData struct {
	Head             string
	Tails            []string
	IDFrom, IDCount  int64
	Threads          int
	Seed             int64
	ResultPath       string
	LoadEndedMessage string
}

// renderScript writes the Lua script of a run of r with the given threads,
// which writes its result to resultPath.
func renderScript(w io.Writer, r *Request, threads int, seed int64, resultPath string) error {
	head, tails := r.rawRequest()
	d := scriptData{Head: head, Tails: tails, Threads: threads, Seed: seed, ResultPath: resultPath, LoadEndedMessage: loadEnded}
	if r.PathPrefix != "" {
		d.IDFrom, d.IDCount = r.IDs.From, r.IDs.Count
	}
	return wrkScript.Execute(w, d)
}

// wrkResult is what the script's done() writes.
type wrkResult struct {
	Requests   int64 `json:"requests"`
	DurationUS int64 `json:"duration_us"`
	Bytes      int64 `json:"bytes"`
	Errors     struct {
		Connect int64 `json:"connect"`
		Read    int64 `json:"read"`
		Write   int64 `json:"write"`
		Status  int64 `json:"status"`
		Timeout int64 `json:"timeout"`
	} `json:"errors"`
	// Latency holds [µs, count] for every latency wrk's histogram holds,
	// including the samples its coordinated-omission correction added.
	Latency [][2]int64 `json:"-"`
}

func parseWrkResult(b []byte) (wrkResult, error) {
	var doc struct {
		wrkResult
		Latency [][]int64 `json:"latency_us"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return wrkResult{}, fmt.Errorf("reading wrk's result: %w", err)
	}
	r := doc.wrkResult
	if r.Requests < 0 || r.DurationUS < 0 || doc.Latency == nil {
		return r, fmt.Errorf("wrk's result: %d requests in %d µs, latencies %v", r.Requests, r.DurationUS, doc.Latency)
	}
	for _, p := range doc.Latency {
		if len(p) != 2 || p[0] < 0 || p[1] < 0 {
			return r, fmt.Errorf("wrk's result: latency %v is not [µs, count]", p)
		}
		r.Latency = append(r.Latency, [2]int64{p[0], p[1]})
	}
	return r, nil
}

// measuredLatencies returns the latency of every answered request: wrk 4.1
// adds, after the run, synthetic samples to its histogram for the requests a
// slow answer kept from being sent (stats_correct: for each latency n of at
// least 2e, where e is the run's time per request and connection, one more
// at n-e, n-2e, ... while above e). A closed model measures the requests it
// sent, so this takes them out: for v > e the corrected count at v is the
// sum of the original counts at v, v+e, v+2e, ..., hence the original count
// is corrected[v] - corrected[v+e]. Answers slower than the timeout are not
// in wrk's histogram (it counts them as timeouts); missing is how many.
func measuredLatencies(r wrkResult, connections int64) (pairs [][2]int64, missing int64, err error) {
	var total int64
	corrected := make(map[int64]int64, len(r.Latency))
	for _, p := range r.Latency { // non-negative: parseWrkResult checked
		corrected[p[0]] += p[1]
		total += p[1]
	}
	perConn := r.Requests / connections // the same integer arithmetic as wrk's
	if total > r.Requests && perConn > 0 {
		e := r.DurationUS / perConn
		if e <= 0 {
			return nil, 0, fmt.Errorf("wrk's result: %d requests in %d µs over %d connections", r.Requests, r.DurationUS, connections)
		}
		total = 0
		for _, p := range r.Latency {
			v, n := p[0], p[1]
			if v > e {
				n -= corrected[v+e]
			}
			if n < 0 {
				return nil, 0, fmt.Errorf("wrk's latency histogram is not wrk 4.1's corrected one (%d µs: %d)", v, n)
			}
			if n > 0 {
				pairs = append(pairs, [2]int64{v, n})
				total += n
			}
		}
	} else {
		pairs = r.Latency
	}
	if total > r.Requests {
		return nil, 0, fmt.Errorf("wrk's latency histogram holds %d requests, more than the %d it answered", total, r.Requests)
	}
	return pairs, r.Requests - total, nil
}

// outcome turns wrk's result into an Outcome.
func (r wrkResult) outcome(connections int64, timeout time.Duration) (Outcome, error) {
	pairs, missing, err := measuredLatencies(r, connections)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Requests: r.Requests, Statuses: map[string]int64{}, Elapsed: time.Duration(r.DurationUS) * time.Microsecond,
		Latencies: NewLatencies()}
	for _, p := range pairs {
		out.Latencies.recordValues(p[0], p[1])
	}
	// Answered after the timeout: wrk kept no latency, the timeout is a lower bound.
	out.Latencies.recordValues(timeout.Microseconds(), missing)
	e := r.Errors
	for k, v := range map[string]int64{"2xx/3xx": r.Requests - e.Status, "non-2xx/3xx": e.Status, "socket connect": e.Connect,
		"socket read": e.Read, "socket write": e.Write, "timeout": e.Timeout} {
		if v > 0 {
			out.Statuses[k] = v
		}
	}
	out.Errors = e.Status + e.Connect + e.Read + e.Write + e.Timeout
	return out, nil
}

// errorSummary says what wrk counted, e.g. "58 answers were not 2xx/3xx,
// 2 socket read errors".
func (r wrkResult) errorSummary() string {
	var parts []string
	e := r.Errors
	if e.Status > 0 {
		parts = append(parts, fmt.Sprintf("%d answers were not 2xx/3xx", e.Status))
	}
	for _, c := range []struct {
		n    int64
		what string
	}{{e.Connect, "socket connect"}, {e.Read, "socket read"}, {e.Write, "socket write"}, {e.Timeout, "timeout"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s errors", c.n, c.what))
		}
	}
	return strings.Join(parts, ", ")
}

// runWrk runs s.Request with wrk: a closed model with s.Concurrency
// connections, each sending its next request when the last one is answered.
func runWrk(ctx context.Context, s Spec) (Outcome, error) {
	r := s.Request
	if err := r.validate(); err != nil {
		return Outcome{}, fmt.Errorf("load %s: %w", s.Name, err)
	}
	bin, err := exec.LookPath("wrk")
	if err != nil {
		return Outcome{}, fmt.Errorf("load %s: wrk is not on PATH: %s", s.Name, wrkMissing)
	}
	dir, err := os.MkdirTemp("", "bench-wrk-")
	if err != nil {
		return Outcome{}, fmt.Errorf("load %s: %w", s.Name, err)
	}
	defer os.RemoveAll(dir)
	script, result := filepath.Join(dir, "load.lua"), filepath.Join(dir, "result.json")
	threads := wrkThreads(s.Concurrency)
	var text bytes.Buffer
	if err := renderScript(&text, r, threads, rand.Int64N(1<<31), result); err != nil {
		return Outcome{}, fmt.Errorf("load %s: writing the wrk script: %w", s.Name, err)
	}
	if err := os.WriteFile(script, text.Bytes(), 0o600); err != nil {
		return Outcome{}, fmt.Errorf("load %s: %w", s.Name, err)
	}

	// wrk takes whole seconds: it is asked for the duration rounded up and
	// interrupted (SIGINT: it stops, reports and runs done()) at the right
	// time; its own clock gives the elapsed time.
	secs := max(int64((s.Duration+time.Second-1)/time.Second), 1)
	timeoutSecs := max(int64((s.Timeout+time.Second-1)/time.Second), 1)
	cmd := exec.Command(bin, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(s.Concurrency), "-d", fmt.Sprintf("%ds", secs),
		"--timeout", fmt.Sprintf("%ds", timeoutSecs), "-s", script, strings.TrimSuffix(r.Base, "/")+"/")
	var stdout bytes.Buffer // wrk's own text summary: only shown when it fails
	cmd.Stdout = &stdout
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Outcome{}, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return Outcome{}, err
	}
	if err := cmd.Start(); err != nil {
		return Outcome{}, fmt.Errorf("load %s: starting wrk: %w", s.Name, err)
	}

	stopped := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		timer := time.NewTimer(s.Duration)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
		case <-stopped:
			return
		}
		_ = cmd.Process.Signal(os.Interrupt)
		// done() reads out a histogram of up to 10^7 µs: give it time.
		select {
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
		case <-stopped:
		}
	})

	var messages []string
	ended := false
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line != loadEnded || ended {
			messages = append(messages, line)
			continue
		}
		ended = true
		if s.OnLoadEnd != nil {
			s.OnLoadEnd()
		}
		_, _ = io.WriteString(stdin, "\n") // done() goes on
	}
	_, _ = io.Copy(io.Discard, stderr) // after a line too long to scan
	stdin.Close()
	waitErr := cmd.Wait()
	close(stopped)
	wg.Wait()

	fail := func(what string) error {
		return fmt.Errorf("load %s: wrk %s; stderr: %s; stdout: %s", s.Name, what, lastLines([]byte(strings.Join(messages, "\n")), 5),
			lastLines(stdout.Bytes(), 5))
	}
	if waitErr != nil {
		return Outcome{}, fail(waitErr.Error())
	}
	b, err := os.ReadFile(result)
	if err != nil {
		return Outcome{}, fail("left no result (" + err.Error() + ")")
	}
	res, err := parseWrkResult(b)
	if err != nil {
		return Outcome{}, fail(err.Error())
	}
	out, err := res.outcome(int64(s.Concurrency), s.Timeout)
	if err != nil {
		return Outcome{}, fail(err.Error())
	}
	if out.Errors > 0 {
		// wrk keeps no answers: ask again to say what the errors were.
		out.FirstError = "wrk: " + res.errorSummary() + "; " + probe(ctx, r, s.Timeout)
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("load %s: %w", s.Name, err)
	}
	return out, nil
}

// probeTries bounds the requests probe sends: errors that come and go (one
// answer in ten) still show, and a healthy service is not loaded again.
const probeTries = 10

// probe sends requests of r's shape one at a time until one fails, and
// describes the first failure (or that none failed).
func probe(ctx context.Context, r *Request, timeout time.Duration) string {
	client := &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := strings.TrimSuffix(r.Base, "/")
	last := ""
	for i := range probeTries {
		target := r.Path
		if r.PathPrefix != "" {
			target = r.PathPrefix + strconv.FormatInt(r.IDs.From+rand.Int64N(r.IDs.Count), 10)
		}
		req, err := http.NewRequestWithContext(ctx, r.Method, base+target, bytes.NewReader(r.Body))
		if err != nil {
			return "a probe could not be made: " + err.Error()
		}
		for k, vs := range r.Header {
			req.Header[k] = vs
		}
		if len(r.Authorizations) > 0 {
			req.Header.Set("Authorization", r.Authorizations[i%len(r.Authorizations)])
		}
		which := "a probe"
		if i > 0 {
			which = fmt.Sprintf("probe %d of up to %d", i+1, probeTries)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Sprintf("%s (%s %s) failed: %v", which, r.Method, target, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 201))
		resp.Body.Close()
		if resp.StatusCode > 399 {
			msg := fmt.Sprintf("%s (%s %s) got: %d", which, r.Method, target, resp.StatusCode)
			if len(body) > 0 {
				if len(body) > 200 {
					body = append(body[:200], "..."...)
				}
				msg += " " + strings.TrimSpace(string(body))
			}
			return msg
		}
		last = strconv.Itoa(resp.StatusCode)
	}
	return fmt.Sprintf("%d probes after the run all got 2xx/3xx (the last %s): the errors came with the load", probeTries, last)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, " | ")
	if s == "" {
		return "(none)"
	}
	return s
}
