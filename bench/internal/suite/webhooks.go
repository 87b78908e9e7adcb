package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/eventreg/eventreg/bench/internal/dataset"
	"github.com/eventreg/eventreg/bench/internal/oauthflow"
	"github.com/eventreg/eventreg/bench/internal/report"
	"github.com/eventreg/eventreg/e2e/stack"
)

// Webhook measurement sizes: the burst is one import's changes (bounded so
// that the phase stays under a minute at the target rate); the single
// changes are imported one at a time, each waited for.
const (
	webhookBurst   = 2000
	webhookSingles = 40
)

// webhookAllowedNetworks lets auth deliver to the receiver on this machine.
const webhookAllowedNetworks = "127.0.0.1/32"

// webhookReceiver records each delivery's arrival (by its Webhook-Id) and the
// delay since the volunteer's updatedAt, which the change's transaction set.
type webhookReceiver struct {
	mu         sync.Mutex
	arrived    map[string]time.Time
	duplicates int
	delays     []time.Duration
	last       time.Time
	changed    chan struct{}
}

func (r *webhookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	now := time.Now()
	var p struct {
		Data struct {
			UpdatedAt time.Time `json:"updatedAt"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &p)
	id := req.Header.Get("Webhook-Id")
	r.mu.Lock()
	if _, seen := r.arrived[id]; seen {
		r.duplicates++
	} else {
		r.arrived[id] = now
		r.last = now
		if !p.Data.UpdatedAt.IsZero() {
			r.delays = append(r.delays, now.Sub(p.Data.UpdatedAt))
		}
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// count returns how many distinct deliveries arrived.
func (r *webhookReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrived)
}

// waitFor waits until n distinct deliveries arrived.
func (r *webhookReceiver) waitFor(ctx context.Context, n int, limit time.Duration) error {
	deadline := time.After(limit)
	for r.count() < n {
		select {
		case <-r.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			return fmt.Errorf("%d of %d webhook deliveries arrived within %v", r.count(), n, limit)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// measureWebhooks subscribes the demo integration's webhook to
// volunteer-updated, then times a burst (one import changing many
// volunteers) and single changes (one import each).
func measureWebhooks(ctx context.Context, s *stack.Stack, env *environment, say func(string, ...any)) *report.Webhooks {
	res := &report.Webhooks{}
	if err := runWebhooks(ctx, s, env, say, res); err != nil {
		res.Error = err.Error()
		say("webhooks: %v", err)
	}
	return res
}

func runWebhooks(ctx context.Context, s *stack.Stack, env *environment, say func(string, ...any), res *report.Webhooks) error {
	vols, err := env.store.Volunteers(ctx, conventionID, webhookBurst)
	if err != nil {
		return err
	}
	if len(vols) == 0 {
		return fmt.Errorf("the data set holds no volunteers")
	}
	recv := &webhookReceiver{arrived: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	srv := httptest.NewServer(recv)
	defer srv.Close()

	token, err := oauthflow.ServiceToken(ctx, env.base, serviceClientID, serviceClientSecret, "webhook:manage")
	if err != nil {
		return err
	}
	sub, err := env.webhookCall(ctx, token, http.MethodPost, "/api/v0/webhooks",
		fmt.Sprintf(`{"url": %q, "events": ["volunteer-updated"], "description": "benchmark receiver"}`, srv.URL))
	if err != nil {
		return err
	}
	defer func() {
		_, _ = env.webhookCall(context.WithoutCancel(ctx), token, http.MethodDelete, "/api/v0/webhooks/"+sub, "")
	}()

	stamp := time.Now().UTC().Format(time.RFC3339Nano)
	dir, err := os.MkdirTemp("", "eventreg-webhook-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Burst.
	say("webhooks: importing %d volunteer changes in one import ...", len(vols))
	path, err := writeVolunteerChanges(dir, "burst", vols, stamp)
	if err != nil {
		return err
	}
	if out, err := s.Services["volunteers"].Run(ctx, nil, "import", path); err != nil {
		return fmt.Errorf("volunteers import: %v: %s", err, strings.TrimSpace(out))
	}
	committed := time.Now()
	if err := recv.waitFor(ctx, len(vols), 3*time.Minute); err != nil {
		return err
	}
	recv.mu.Lock()
	first := committed
	for _, at := range recv.arrived {
		if at.Before(first) {
			first = at
		}
	}
	res.BurstEvents, res.BurstSeconds = len(recv.arrived), recv.last.Sub(first).Seconds()
	recv.delays = nil
	recv.mu.Unlock()
	if res.BurstSeconds > 0 {
		res.EventsPerSecond = float64(res.BurstEvents) / res.BurstSeconds
	}
	say("webhooks: burst of %d delivered in %.1f s (%.0f events/s)", res.BurstEvents, res.BurstSeconds, res.EventsPerSecond)

	// Single changes, one at a time.
	for i := range webhookSingles {
		v := vols[i%len(vols)]
		path, err := writeVolunteerChanges(dir, fmt.Sprint("single-", i), []dataset.VolunteerRecord{v}, fmt.Sprint(stamp, "-", i))
		if err != nil {
			return err
		}
		before := recv.count()
		if out, err := s.Services["volunteers"].Run(ctx, nil, "import", path); err != nil {
			return fmt.Errorf("volunteers import: %v: %s", err, strings.TrimSpace(out))
		}
		if err := recv.waitFor(ctx, before+1, 30*time.Second); err != nil {
			return err
		}
	}
	recv.mu.Lock()
	delays := slices.Clone(recv.delays)
	res.DuplicateDeliveries = recv.duplicates
	recv.mu.Unlock()
	slices.Sort(delays)
	res.SingleEvents = len(delays)
	if len(delays) > 0 {
		pick := func(q float64) float64 {
			return float64(delays[min(len(delays)-1, int(q*float64(len(delays))))].Microseconds()) / 1000
		}
		res.SingleP50Millis, res.SingleP99Millis, res.SingleMaxMillis = pick(0.5), pick(0.99), pick(1)
	}
	say("webhooks: single changes p50 %.0f ms, p99 %.0f ms (%d changes)", res.SingleP50Millis, res.SingleP99Millis, res.SingleEvents)
	return nil
}

// stampOption is the volunteer option each run sets to its own stamp.
const stampOption = "Webhook benchmark"

// writeVolunteerChanges writes a fixture with vols, each with the option
// stampOption set to stamp (so that each import changes every record).
func writeVolunteerChanges(dir, name string, vols []dataset.VolunteerRecord, stamp string) (string, error) {
	type option struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	}
	out := make([]map[string]any, len(vols))
	for i, v := range vols {
		var opts []json.RawMessage
		if err := json.Unmarshal(v.Options, &opts); err != nil {
			return "", fmt.Errorf("options of volunteer %d: %w", v.UserID, err)
		}
		kept := opts[:0]
		for _, o := range opts {
			var named struct{ Name string }
			if json.Unmarshal(o, &named) != nil || named.Name != stampOption {
				kept = append(kept, o)
			}
		}
		stampOpt, _ := json.Marshal(option{Name: stampOption, Type: "text", Value: stamp})
		out[i] = map[string]any{"userId": v.UserID, "contactMethods": v.ContactMethods, "departments": v.Departments,
			"options": append(kept, stampOpt)}
	}
	b, err := json.Marshal(map[string]any{"conventionId": conventionID, "volunteers": out})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".json")
	return path, os.WriteFile(path, b, 0o600)
}

// webhookCall sends a webhook API request and returns the "id" of a created
// subscription.
func (env *environment) webhookCall(ctx context.Context, token, method, path, body string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, env.base+path, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := env.httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	var created struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &created)
	return created.ID, nil
}
