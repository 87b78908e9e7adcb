// Package load drives a closed-model load (a fixed number of workers, each sending its next request as soon as its previous one is answered) with wrk for stateless requests or vegeta's attacker for the rest, and records latencies in an HDR histogram.
package load

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Spec is one load run: a Request that wrk sends, or a Targeter that
// vegeta's attacker sends (requests built from earlier answers: single-use
// codes, rotated refresh tokens); docs/performance.md, "How it measures",
// says why.
type Spec struct {
	Name        string
	Concurrency int
	Duration    time.Duration
	Request     *Request
	Targeter    vegeta.Targeter
	// OnResult, when set, sees every result in order of arrival (one
	// goroutine), e.g. to hand a rotated refresh token back to the targeter.
	OnResult func(*vegeta.Result)
	// Timeout of one request (default 10s).
	Timeout time.Duration
	// KeepBody keeps response bodies for OnResult (default: read and dropped).
	KeepBody bool
	// OnLoadEnd, when set, is called once when the load stops, before the
	// results are read out (wrk's histogram): where a caller measuring the
	// machine during the load takes its last snapshot.
	OnLoadEnd func()
}

// Outcome is what a run measured.
type Outcome struct {
	Requests int64
	Errors   int64 // answers that are not 2xx (wrk: 4xx and 5xx), transport errors
	// Statuses counts answers by status code (vegeta) or by wrk's classes
	// ("2xx/3xx", "non-2xx/3xx") and socket errors ("socket read", ...).
	Statuses   map[string]int64
	FirstError string
	Elapsed    time.Duration
	Latencies  *Latencies
}

// RPS is the throughput of the run.
func (o Outcome) RPS() float64 {
	if o.Elapsed <= 0 {
		return 0
	}
	return float64(o.Requests) / o.Elapsed.Seconds()
}

// Latencies is a histogram of request latencies from 1µs to 1 minute with 3
// significant digits.
type Latencies struct{ h *hdrhistogram.Histogram }

// NewLatencies returns an empty histogram.
func NewLatencies() *Latencies {
	return &Latencies{h: hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)}
}

// Record adds one latency (clamped to the histogram's range).
func (l *Latencies) Record(d time.Duration) {
	us := d.Microseconds()
	us = max(us, 1)
	us = min(us, l.h.HighestTrackableValue())
	_ = l.h.RecordValue(us) // cannot fail: clamped to the range
}

// recordValues adds n latencies of us microseconds (clamped to the range).
func (l *Latencies) recordValues(us, n int64) {
	if n <= 0 {
		return
	}
	us = max(us, 1)
	us = min(us, l.h.HighestTrackableValue())
	_ = l.h.RecordValues(us, n) // cannot fail: clamped to the range
}

// Count is the number of latencies recorded.
func (l *Latencies) Count() int64 { return l.h.TotalCount() }

// Quantile returns the latency at q percent (e.g. 99.9), to within the
// histogram's precision; 0 when nothing was recorded.
func (l *Latencies) Quantile(q float64) time.Duration {
	if l.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(l.h.ValueAtQuantile(q)) * time.Microsecond
}

// Max is the largest latency recorded.
func (l *Latencies) Max() time.Duration {
	if l.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(l.h.Max()) * time.Microsecond
}

// Run sends requests from s.Concurrency workers for s.Duration (or until the
// targeter returns an error such as vegeta.ErrNoTargets, or ctx ends) and
// returns what it measured.
func Run(ctx context.Context, s Spec) (Outcome, error) {
	if s.Concurrency < 1 {
		return Outcome{}, errors.New("load: concurrency must be at least 1")
	}
	if s.Timeout == 0 {
		s.Timeout = 10 * time.Second
	}
	if (s.Request == nil) == (s.Targeter == nil) {
		return Outcome{}, fmt.Errorf("load %s: set exactly one of Request and Targeter", s.Name)
	}
	if s.Request != nil {
		return runWrk(ctx, s)
	}
	n := uint64(s.Concurrency)
	maxBody := int64(512) // enough to say why a request failed
	if s.KeepBody {
		maxBody = -1
	}
	atk := vegeta.NewAttacker(vegeta.Workers(n), vegeta.MaxWorkers(n), vegeta.Connections(s.Concurrency),
		vegeta.Timeout(s.Timeout), vegeta.Redirects(vegeta.NoFollow), vegeta.MaxBody(maxBody), vegeta.KeepAlive(true))
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()

	out := Outcome{Statuses: map[string]int64{}, Latencies: NewLatencies()}
	// Rate zero: no pacing, each of the n workers sends as fast as it is answered.
	start := time.Now()
	for res := range atk.Attack(s.Targeter, vegeta.ConstantPacer{}, s.Duration, s.Name) {
		if res.Method == "" && res.Error != "" {
			// The targeter ended the run (no more targets): not a request.
			if res.Error != vegeta.ErrNoTargets.Error() && out.FirstError == "" {
				out.FirstError = "targeter: " + res.Error
			}
			continue
		}
		out.Requests++
		out.Latencies.Record(res.Latency)
		out.Statuses[strconv.Itoa(int(res.Code))]++
		if res.Code < 200 || res.Code > 299 {
			out.Errors++
			if out.FirstError == "" {
				out.FirstError = describe(res)
			}
		}
		if s.OnResult != nil {
			s.OnResult(res)
		}
	}
	out.Elapsed = time.Since(start)
	if s.OnLoadEnd != nil {
		s.OnLoadEnd()
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("load %s: %w", s.Name, err)
	}
	return out, nil
}

func describe(res *vegeta.Result) string {
	msg := fmt.Sprintf("%s %s: %d", res.Method, res.URL, res.Code)
	if res.Error != "" {
		msg += " " + res.Error
	}
	if len(res.Body) > 0 {
		body := string(res.Body)
		if len(body) > 200 {
			body = body[:200] + "..."
		}
		msg += ": " + body
	}
	return msg
}

// Merge adds the measurements of b to a (two slices of one measurement).
func Merge(a, b Outcome) Outcome {
	out := Outcome{Requests: a.Requests + b.Requests, Errors: a.Errors + b.Errors, Statuses: map[string]int64{},
		FirstError: a.FirstError, Elapsed: a.Elapsed + b.Elapsed, Latencies: NewLatencies()}
	if out.FirstError == "" {
		out.FirstError = b.FirstError
	}
	for _, m := range []map[string]int64{a.Statuses, b.Statuses} {
		for k, v := range m {
			out.Statuses[k] += v
		}
	}
	for _, l := range []*Latencies{a.Latencies, b.Latencies} {
		if l != nil {
			out.Latencies.h.Merge(l.h) // same range and precision: nothing is dropped
		}
	}
	return out
}
