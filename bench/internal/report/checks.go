package report

import (
	"fmt"
	"sort"
	"strings"
)

// Scenario names the checks refer to.
const (
	ClientCredentials   = "token-client-credentials"
	AuthorizationCode   = "token-authorization-code"
	RefreshRotation     = "token-refresh"
	UserByID            = "users-get"
	UserByIDDirect      = "users-get-direct" // no target: users-get without the gateway hop
	UsersSearchFirst    = "users-search-first"
	UsersSearchDeep     = "users-search-deep"
	UsersRoleFirst      = "users-search-role-first"
	UsersRoleDeep       = "users-search-role-deep"
	RegistrationsFirst  = "registrations-search-first"
	RegistrationsDeep   = "registrations-search-deep"
	CurrentUser         = "users-current"
	DepartmentsList     = "departments-list"
	ValidateCachedBench = "ValidateCached"
)

// Targets are the figures.
type Targets struct {
	TokenRPS               float64 // client credentials at TokenConcurrency
	TokenP99Millis         float64
	TokenConcurrency       int
	ReadShareOfPg          float64 // authenticated reads / pgbench -S tps
	ValidateCachedNs       float64
	DepthCostRatio         float64
	MaxRSSBytes            int64
	ServicesWithinRSS      []string
	WebhookEventsPerSecond float64 // a burst drained to one receiver
	WebhookP99Millis       float64 // one change at a time, change to receipt
}

// DefaultTargets are the targets of the performance issue.
func DefaultTargets() Targets {
	return Targets{TokenRPS: 5000, TokenP99Millis: 25, TokenConcurrency: 64, ReadShareOfPg: 0.5,
		ValidateCachedNs: 5000, DepthCostRatio: 1.2, MaxRSSBytes: 100 << 20,
		ServicesWithinRSS:      []string{"auth", "users", "volunteers", "registrations"},
		WebhookEventsPerSecond: 100, WebhookP99Millis: 1000}
}

func status(ok bool) Status {
	if ok {
		return Pass
	}
	return Miss
}

// DepthRatio is the cost of the deep page relative to the first page: the
// ratio of their throughputs at the same concurrency (1/rps is the cost of a
// request on a saturated machine). It is 0 when either is missing.
func DepthRatio(first, deep Scenario) float64 {
	if first.RPS <= 0 || deep.RPS <= 0 {
		return 0
	}
	return first.RPS / deep.RPS
}

// Evaluate sets r.Checks from the measured figures.
func (r *Report) Evaluate(t Targets) {
	r.Checks = nil
	add := func(c Check) { r.Checks = append(r.Checks, c) }

	// Client-credentials token issuance.
	if s, ok := r.Find(ClientCredentials, t.TokenConcurrency); ok {
		add(Check{Name: fmt.Sprintf("client-credentials tokens/s at concurrency %d", t.TokenConcurrency), Target: fmt.Sprintf(">= %.0f/s", t.TokenRPS),
			Value: Rate(s.RPS) + "/s", Status: status(s.RPS >= t.TokenRPS && s.Errors == 0)})
		add(Check{Name: fmt.Sprintf("client-credentials p99 at concurrency %d", t.TokenConcurrency), Target: fmt.Sprintf("< %g ms", t.TokenP99Millis),
			Value: Millis(s.P99Millis) + " ms", Status: status(s.P99Millis < t.TokenP99Millis && s.Requests > 0)})
	} else {
		add(Check{Name: "client-credentials token issuance", Target: fmt.Sprintf(">= %.0f/s, p99 < %g ms", t.TokenRPS, t.TokenP99Millis), Value: "not measured", Status: NotRun})
	}

	r.evaluateReads(t, add)

	// Validation of a token seen before.
	if m, ok := r.FindMicro(ValidateCachedBench); ok {
		add(Check{Name: "token validation, token seen before (BenchmarkValidateCached)", Target: fmt.Sprintf("< %g µs", t.ValidateCachedNs/1000),
			Value: fmt.Sprintf("%.2f µs", m.NsPerOp/1000), Status: status(m.NsPerOp < t.ValidateCachedNs)})
	} else {
		add(Check{Name: "token validation, token seen before", Target: fmt.Sprintf("< %g µs", t.ValidateCachedNs/1000), Value: "not measured", Status: NotRun})
	}

	// Search at depth.
	pairs := []struct{ label, first, deep string }{
		{"users search, page at depth vs first page", UsersSearchFirst, UsersSearchDeep},
		{"users search by roleId, last page vs first page", UsersRoleFirst, UsersRoleDeep},
		{"registrations search, last page vs first page", RegistrationsFirst, RegistrationsDeep},
	}
	for _, p := range pairs {
		for _, c := range r.Settings.Concurrency {
			first, ok1 := r.Find(p.first, c)
			deep, ok2 := r.Find(p.deep, c)
			name := fmt.Sprintf("%s (concurrency %d)", p.label, c)
			target := fmt.Sprintf("<= %gx", t.DepthCostRatio)
			if !ok1 || !ok2 {
				add(Check{Name: name, Target: target, Value: "not measured", Status: NotRun})
				continue
			}
			ratio := DepthRatio(first, deep)
			add(Check{Name: name, Target: target, Value: fmt.Sprintf("%.2fx", ratio),
				Detail: fmt.Sprintf("%s/s vs %s/s; p50 %s vs %s ms", Rate(deep.RPS), Rate(first.RPS), Millis(deep.P50Millis), Millis(first.P50Millis)),
				Status: status(ratio > 0 && ratio <= t.DepthCostRatio && first.Errors == 0 && deep.Errors == 0)})
		}
	}

	r.evaluateWebhooks(t, add)

	// Memory.
	for _, svc := range t.ServicesWithinRSS {
		peak, ok := r.PeakRSS[svc]
		name := fmt.Sprintf("peak RSS of %s", svc)
		target := "<= " + MiB(t.MaxRSSBytes)
		if !ok {
			add(Check{Name: name, Target: target, Value: "not running", Status: NotRun})
			continue
		}
		add(Check{Name: name, Target: target, Value: MiB(peak), Status: status(peak <= t.MaxRSSBytes)})
	}

	// Errors.
	var failing []string
	measured := 0
	for _, s := range r.Scenarios {
		if s.Skipped != "" {
			continue
		}
		measured++
		if s.Errors > 0 {
			failing = append(failing, fmt.Sprintf("%s@%d: %d", s.Name, s.Concurrency, s.Errors))
		}
	}
	sort.Strings(failing)
	errCheck := Check{Name: "errors in every scenario", Target: "0", Value: "0", Status: Pass}
	switch {
	case measured == 0:
		errCheck.Value, errCheck.Status = "nothing measured", NotRun
	case len(failing) > 0:
		errCheck.Value, errCheck.Status = strings.Join(failing, "; "), Miss
	}
	add(errCheck)
}

// evaluateWebhooks checks the webhook burst rate and single-change latency.
func (r *Report) evaluateWebhooks(t Targets, add func(Check)) {
	rate := Check{Name: "webhook events delivered/s (one import's burst)", Target: fmt.Sprintf(">= %.0f/s", t.WebhookEventsPerSecond)}
	p99 := Check{Name: "webhook p99, change to receipt (one change at a time)", Target: fmt.Sprintf("< %g ms", t.WebhookP99Millis)}
	switch wh := r.Webhooks; {
	case wh == nil:
		rate.Value, rate.Status, p99.Value, p99.Status = "not measured", NotRun, "not measured", NotRun
	case wh.Error != "":
		rate.Value, rate.Status, p99.Value, p99.Status = "failed", Miss, "failed", Miss
	default:
		rate.Value, rate.Detail = Rate(wh.EventsPerSecond)+"/s", fmt.Sprintf("%d events in %.1f s", wh.BurstEvents, wh.BurstSeconds)
		rate.Status = status(wh.EventsPerSecond >= t.WebhookEventsPerSecond)
		p99.Value, p99.Detail = Millis(wh.SingleP99Millis)+" ms", fmt.Sprintf("%d changes, p50 %s ms", wh.SingleEvents, Millis(wh.SingleP50Millis))
		p99.Status = status(wh.SingleEvents > 0 && wh.SingleP99Millis < t.WebhookP99Millis)
	}
	add(rate)
	add(p99)
}

// evaluateReads compares GET /api/v0/users/:id with the pgbench baseline:
// at each concurrency against pgbench with as many clients, and, when more
// than one level was measured, the best of each against the other (the
// strictest reading: pgbench at its best number of clients).
func (r *Report) evaluateReads(t Targets, add func(Check)) {
	target := fmt.Sprintf(">= %.0f%% of pgbench", t.ReadShareOfPg*100)
	var best Scenario
	var bestPg PgBench
	compared := 0
	for _, c := range r.Settings.Concurrency {
		name := fmt.Sprintf("GET /api/v0/users/:id req/s vs pgbench -S tps (concurrency %d)", c)
		s, ok := r.Find(UserByID, c)
		pg, pgOK := r.Baseline(c)
		switch {
		case !ok:
			add(Check{Name: name, Target: target, Value: "not measured", Status: NotRun})
			continue
		case !pgOK || pg.TPS <= 0:
			add(Check{Name: name, Target: target, Value: "pgbench not measured", Status: NotRun})
			continue
		}
		share := s.RPS / pg.TPS
		add(Check{Name: name, Target: target, Value: fmt.Sprintf("%.0f%%", share*100),
			Detail: fmt.Sprintf("%s/s vs %s tps", Rate(s.RPS), Rate(pg.TPS)), Status: status(share >= t.ReadShareOfPg && s.Errors == 0)})
		compared++
		if s.RPS > best.RPS {
			best = s
		}
		if pg.TPS > bestPg.TPS {
			bestPg = pg
		}
	}
	if compared < 2 {
		return
	}
	share := best.RPS / bestPg.TPS
	add(Check{Name: "GET /api/v0/users/:id best req/s vs pgbench -S best tps", Target: target, Value: fmt.Sprintf("%.0f%%", share*100),
		Detail: fmt.Sprintf("%s/s at concurrency %d vs %s tps with %d clients", Rate(best.RPS), best.Concurrency, Rate(bestPg.TPS), bestPg.Clients),
		Status: status(share >= t.ReadShareOfPg && best.Errors == 0)})
}

// Missed lists the checks that missed their target.
func (r *Report) Missed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == Miss {
			out = append(out, c)
		}
	}
	return out
}
