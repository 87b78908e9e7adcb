package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"golang.org/x/oauth2"
	"google.golang.org/protobuf/proto"

	"github.com/eventreg/eventreg/e2e/stack"
	"github.com/eventreg/eventreg/libs/testkit"
)

// otlpSpan is a received span with its service's name and flattened attributes.
type otlpSpan struct {
	Service             string
	Name                string
	Kind                tracepb.Span_SpanKind
	TraceID, ID, Parent string
	Attrs               map[string]string
}

// otlpReceiver is an OTLP/HTTP (protobuf) trace receiver: what the services'
// exporters send to a collector, kept for the test.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []otlpSpan
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []otlpSpan
	for _, rs := range export.GetResourceSpans() {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				attrs := attrMap(sp.GetAttributes())
				for _, ev := range sp.GetEvents() {
					for k, v := range attrMap(ev.GetAttributes()) {
						attrs["event."+ev.GetName()+"."+k] = v
					}
				}
				got = append(got, otlpSpan{Service: service, Name: sp.GetName(), Kind: sp.GetKind(),
					TraceID: hex.EncodeToString(sp.GetTraceId()), ID: hex.EncodeToString(sp.GetSpanId()),
					Parent: hex.EncodeToString(sp.GetParentSpanId()), Attrs: attrs})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return m
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := []string{}
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyValue(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	}
	return v.String()
}

// all returns every span received so far.
func (r *otlpReceiver) all() []otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]otlpSpan(nil), r.spans...)
}

// trace waits until ready accepts the spans of traceID, then returns them.
func (r *otlpReceiver) trace(t *testing.T, traceID string, ready func([]otlpSpan) error) []otlpSpan {
	t.Helper()
	var spans []otlpSpan
	err := testkit.Poll(context.Background(), 20*time.Second, func(context.Context) error {
		spans = spans[:0]
		for _, sp := range r.all() {
			if sp.TraceID == traceID {
				spans = append(spans, sp)
			}
		}
		return ready(spans)
	})
	if err != nil {
		t.Fatalf("trace %s incomplete: %v\nspans: %s", traceID, err, describeSpans(spans))
	}
	return spans
}

func describeSpans(spans []otlpSpan) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %s %q kind=%s id=%s parent=%s", s.Service, s.Name, s.Kind, s.ID, s.Parent)
	}
	return b.String()
}

// find returns the spans of service whose name and kind match.
func find(spans []otlpSpan, service string, kind tracepb.Span_SpanKind, match func(otlpSpan) bool) []otlpSpan {
	var out []otlpSpan
	for _, s := range spans {
		if s.Service == service && s.Kind == kind && (match == nil || match(s)) {
			out = append(out, s)
		}
	}
	return out
}

func isDB(s otlpSpan) bool {
	return s.Attrs["db.system"] == "postgresql" || s.Attrs["db.system.name"] == "postgresql"
}

func isRedis(s otlpSpan) bool {
	return s.Attrs["db.system"] == "redis" || s.Attrs["db.system.name"] == "redis"
}

// descendsFrom reports whether span reaches ancestor by parent links.
func descendsFrom(spans []otlpSpan, span otlpSpan, ancestor string) bool {
	byID := map[string]otlpSpan{}
	for _, s := range spans {
		byID[s.ID] = s
	}
	for cur, hops := span, 0; hops < 64; hops++ {
		if cur.Parent == ancestor {
			return true
		}
		next, ok := byID[cur.Parent]
		if !ok {
			return false
		}
		cur = next
	}
	return false
}

// newTraceparent is what a browser or an upstream tracer would send.
func newTraceparent() (header, traceID, spanID string) {
	tid, sid := make([]byte, 16), make([]byte, 8)
	_, _ = rand.Read(tid)
	_, _ = rand.Read(sid)
	traceID, spanID = hex.EncodeToString(tid), hex.EncodeToString(sid)
	return "00-" + traceID + "-" + spanID + "-01", traceID, spanID
}

// scrape reads a service's /metrics from its ops listener.
func scrape(t *testing.T, s *stack.Stack, service string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(s.Services[service].OpsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s metrics: %v", service, err)
	}
	return fams
}

// value is the sum of the family's samples whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	for _, m := range fams[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			ok = ok && labels[k] == v
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// TestObservability runs the real binaries behind nginx, exporting traces to
// an OTLP receiver in the test, and checks traces, logs and metrics.
func TestObservability(t *testing.T) {
	rcv := startOTLPReceiver(t)
	s := stack.Start(t, stack.Options{Env: map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY":     "100",
	}})
	gw, ctx := s.GatewayURL, context.Background()
	before := map[string]map[string]*dto.MetricFamily{}
	for name := range s.Services {
		before[name] = scrape(t, s, name)
	}
	// Everything that must never reach a span attribute or a log line.
	secrets := []string{trackerSecret, authBadgeSecret, authAlicePass, "alice@example.org", "+15555550100", "5555550100"}

	tracker := serviceToken(t, s, trackerID, trackerSecret, "registration:read", "user:roles:update")
	secrets = append(secrets, tracker)
	// traced sends a request through the gateway as part of a trace the
	// caller began (traceparent tp).
	traced := func(t *testing.T, tp, method, path, token, body string) reply {
		t.Helper()
		req, _ := newRequest(gw, method, path, token, body)
		req.Header.Set("traceparent", tp)
		return mustDo(t, s.HTTPClient(), req)
	}

	t.Run("a registration search is one trace from the gateway to users and PostgreSQL", func(t *testing.T) {
		tp, traceID, clientSpan := newTraceparent()
		if r := traced(t, tp, http.MethodPost, "/api/v0/registration/search", tracker, `{"filter": {"userIds": ["1001"]}}`); r.status != 200 {
			t.Fatalf("search: %d %s", r.status, r.body)
		}
		const route = "/api/v0/registration/search"
		spans := rcv.trace(t, traceID, func(spans []otlpSpan) error {
			switch {
			case len(find(spans, "registrations", tracepb.Span_SPAN_KIND_SERVER, nil)) == 0:
				return fmt.Errorf("no registrations server span")
			case len(find(spans, "registrations", tracepb.Span_SPAN_KIND_CLIENT, isDB)) == 0:
				return fmt.Errorf("no registrations PostgreSQL span")
			case len(find(spans, "users", tracepb.Span_SPAN_KIND_SERVER, nil)) == 0:
				return fmt.Errorf("no users server span")
			case len(find(spans, "users", tracepb.Span_SPAN_KIND_CLIENT, isDB)) == 0:
				return fmt.Errorf("no users PostgreSQL span")
			}
			return missingParents(spans, clientSpan)
		})
		server := find(spans, "registrations", tracepb.Span_SPAN_KIND_SERVER, nil)[0]
		if server.Name != "POST "+route || server.Attrs["http.route"] != route || server.Attrs["http.request.method"] != "POST" ||
			server.Attrs["http.response.status_code"] != "200" {
			t.Errorf("server span: %q %v", server.Name, server.Attrs)
		}
		if server.Parent != clientSpan {
			t.Errorf("the gateway did not pass traceparent: the server span's parent is %q, want the caller's %s", server.Parent, clientSpan)
		}
		for _, sp := range spans {
			if sp.ID != server.ID && !descendsFrom(spans, sp, server.ID) {
				t.Errorf("span %s %q is not under the registrations request span%s", sp.Service, sp.Name, describeSpans(spans))
			}
		}
		users := find(spans, "users", tracepb.Span_SPAN_KIND_SERVER, nil)[0]
		outbound := find(spans, "registrations", tracepb.Span_SPAN_KIND_CLIENT, func(s otlpSpan) bool { return s.ID == users.Parent })
		if len(outbound) != 1 || outbound[0].Attrs["http.request.method"] == "" || !descendsFrom(spans, outbound[0], server.ID) {
			t.Errorf("users' server span is not the child of a registrations HTTP client span: %s", describeSpans(spans))
		}
		if !strings.HasPrefix(users.Name, users.Attrs["http.request.method"]+" /") || users.Attrs["http.route"] == "" {
			t.Errorf("users server span not named by route template: %q %v", users.Name, users.Attrs)
		}
		for _, db := range append(find(spans, "registrations", tracepb.Span_SPAN_KIND_CLIENT, isDB), find(spans, "users", tracepb.Span_SPAN_KIND_CLIENT, isDB)...) {
			for k := range db.Attrs {
				if strings.Contains(k, "parameters") || strings.Contains(k, "args") {
					t.Errorf("PostgreSQL span %q records its parameters: %s=%s", db.Name, k, db.Attrs[k])
				}
			}
		}

		t.Run("the request log line leads to the span", func(t *testing.T) {
			line := findLogLine(t, s, "registrations", func(m map[string]any) bool { return m["msg"] == "request" && m["trace_id"] == traceID })
			if line["span_id"] != server.ID || line["route"] != route || line["method"] != "POST" || line["client_id"] != trackerID {
				t.Errorf("request log line: %v", line)
			}
		})
	})

	app := authApp(gw, authBadgeID, authBadgeSecret, "pii:basic", "pii:email", "pii:phone")
	b := newAuthHTTPBrowser(t, gw)
	var obo *oauth2.Token
	t.Run("an OBO login then the current user is traced through auth, Redis, users and PostgreSQL", func(t *testing.T) {
		_ = startAuthCallback(t)
		verifier := oauth2.GenerateVerifier()
		code := b.code(app.AuthCodeURL("o", oauth2.S256ChallengeOption(verifier)), authAlice, authAlicePass)
		secrets = append(secrets, code)
		tok, err := app.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		obo = tok
		secrets = append(secrets, tok.AccessToken, tok.RefreshToken)

		tp, traceID, clientSpan := newTraceparent()
		if r := traced(t, tp, http.MethodGet, "/api/users/current", tok.AccessToken, ""); r.status != 200 || !strings.Contains(r.body, `"username":"alice"`) {
			t.Fatalf("current user: %d %s", r.status, r.body)
		}
		spans := rcv.trace(t, traceID, func(spans []otlpSpan) error {
			if len(find(spans, "users", tracepb.Span_SPAN_KIND_SERVER, nil)) == 0 || len(find(spans, "users", tracepb.Span_SPAN_KIND_CLIENT, isDB)) == 0 {
				return fmt.Errorf("no users server span with a PostgreSQL child yet")
			}
			// Spans are exported in batches: wait until no span's parent is
			// missing (the volunteers request span may come after its children).
			return missingParents(spans, clientSpan)
		})
		server := find(spans, "users", tracepb.Span_SPAN_KIND_SERVER, nil)[0]
		if server.Parent != clientSpan || server.Name != "GET /api/users/:id" || server.Attrs["http.route"] != "/api/users/:id" {
			t.Errorf("current-user server span: %q parent=%s %v", server.Name, server.Parent, server.Attrs)
		}
		for _, sp := range spans {
			if sp.ID != server.ID && !descendsFrom(spans, sp, server.ID) {
				t.Errorf("span %s %q is not under the request span%s", sp.Service, sp.Name, describeSpans(spans))
			}
		}

		// The token request (no traceparent from the client): auth's span,
		// its Redis commands (code redemption) and PostgreSQL (client lookup).
		var tokenTrace []otlpSpan
		err = testkit.Poll(ctx, 20*time.Second, func(context.Context) error {
			all := rcv.all()
			for _, sp := range find(all, "auth", tracepb.Span_SPAN_KIND_SERVER, func(s otlpSpan) bool { return s.Name == "POST /api/oauth/token" }) {
				tokenTrace = tokenTrace[:0]
				for _, x := range all {
					if x.TraceID == sp.TraceID {
						tokenTrace = append(tokenTrace, x)
					}
				}
				if len(find(tokenTrace, "auth", tracepb.Span_SPAN_KIND_CLIENT, isRedis)) > 0 {
					return nil
				}
			}
			return fmt.Errorf("no token-endpoint trace with Redis spans yet")
		})
		if err != nil {
			t.Fatal(err)
		}
		tokenServer := find(tokenTrace, "auth", tracepb.Span_SPAN_KIND_SERVER, nil)[0]
		for _, r := range find(tokenTrace, "auth", tracepb.Span_SPAN_KIND_CLIENT, isRedis) {
			if !descendsFrom(tokenTrace, r, tokenServer.ID) {
				t.Errorf("Redis span %q is not under the token request span", r.Name)
			}
			if st := r.Attrs["db.statement"] + r.Attrs["db.query.text"]; strings.Contains(st, " ") {
				t.Errorf("Redis span %q records its arguments: %q", r.Name, st)
			}
		}
	})

	t.Run("no span attribute or log line holds a token, secret, password, email or phone", func(t *testing.T) {
		all := rcv.all()
		if len(all) == 0 {
			t.Fatal("no spans received")
		}
		for _, sp := range all {
			for k, v := range sp.Attrs {
				for _, secret := range secrets {
					if secret != "" && strings.Contains(v, secret) {
						t.Errorf("span %s %q attribute %s holds a secret", sp.Service, sp.Name, k)
					}
				}
			}
		}
		for name, svc := range s.Services {
			logs, err := os.ReadFile(svc.LogPath())
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range secrets {
				if secret != "" && bytes.Contains(logs, []byte(secret)) {
					t.Errorf("the %s log holds a secret (%d chars)", name, len(secret))
				}
			}
		}
	})

	t.Run("the counters move by the traffic's amounts", func(t *testing.T) {
		if obo == nil {
			t.Skip("the OBO flow failed")
		}
		// Known traffic on top of the above: one refresh, one reuse of the
		// rotated token, one wrong client secret, one wrong password, one
		// consent denial, one role grant.
		if _, err := app.TokenSource(ctx, &oauth2.Token{RefreshToken: obo.RefreshToken}).Token(); err != nil {
			t.Fatal(err)
		}
		if _, err := app.TokenSource(ctx, &oauth2.Token{RefreshToken: obo.RefreshToken}).Token(); testkit.OAuthErrorCode(err) != "invalid_grant" {
			t.Fatalf("reuse: %v", err)
		}
		if _, err := clientCredentials(gw, trackerID, "wrong-secret", oauth2.AuthStyleInHeader).Token(ctx); testkit.OAuthErrorCode(err) != "invalid_client" {
			t.Fatalf("wrong secret: %v", err)
		}
		bob := newAuthHTTPBrowser(t, gw)
		if status, _, _ := bob.login(gw, bob.loginPage(gw), "/oauth/apps", authBob, "not bob's password"); status != http.StatusBadRequest {
			t.Fatalf("wrong password: %d", status)
		}
		status, _, page := bob.authorize(authApp(gw, authStaffID, authStaffSecret, "pii:basic").AuthCodeURL("d"), authBob, authBobPass)
		if status != 200 || !strings.Contains(page, `value="deny"`) {
			t.Fatalf("no consent page: %d", status)
		}
		if status, h, _ := bob.decide(page, "deny"); status/100 != 3 || !strings.Contains(h.Get("Location"), "access_denied") {
			t.Fatalf("deny: %d %v", status, h)
		}
		if r := mustSend(t, s, http.MethodPut, "/api/v0/users/1002/roles/5", tracker, `{"scope":"convention"}`); r.status != http.StatusNoContent {
			t.Fatalf("role grant: %d", r.status)
		}

		after := map[string]map[string]*dto.MetricFamily{}
		for name := range s.Services {
			after[name] = scrape(t, s, name)
		}
		delta := func(service, name string, labels map[string]string) float64 {
			return value(after[service], name, labels) - value(before[service], name, labels)
		}
		cases := []struct {
			service, metric string
			labels          map[string]string
			want            float64
		}{
			{"auth", "auth_tokens_issued_total", map[string]string{"grant_type": "client_credentials", "client_kind": "service"}, 1},
			{"auth", "auth_tokens_issued_total", map[string]string{"grant_type": "authorization_code", "client_kind": "obo"}, 1},
			{"auth", "auth_tokens_issued_total", map[string]string{"grant_type": "refresh_token", "client_kind": "obo"}, 1},
			{"auth", "auth_refresh_token_reuse_total", nil, 1},
			{"auth", "auth_client_authentication_failures_total", map[string]string{"reason": "invalid_credentials"}, 1},
			{"auth", "auth_login_failures_total", nil, 1},
			{"auth", "auth_consent_decisions_total", map[string]string{"decision": "granted"}, 1},
			{"auth", "auth_consent_decisions_total", map[string]string{"decision": "denied"}, 1},
			{"users", "users_role_changes_total", map[string]string{"change": "granted"}, 1},
			{"registrations", "http_server_requests_total", map[string]string{"listener": "public", "route": "/api/v0/registration/search", "method": "POST", "status_class": "2xx"}, 1},
			{"registrations", "http_server_request_duration_seconds", map[string]string{"listener": "public", "route": "/api/v0/registration/search", "method": "POST"}, 1},
			{"users", "http_server_requests_total", map[string]string{"listener": "public", "route": "/api/users/:id", "method": "GET", "status_class": "2xx"}, 1},
			{"users", "http_server_requests_total", map[string]string{"listener": "public", "route": "/api/v0/users/:id/roles/:roleId", "method": "PUT", "status_class": "2xx"}, 1},
			{"auth", "http_server_requests_total", map[string]string{"listener": "public", "route": "/api/oauth/token", "status_class": "4xx"}, 2},
		}
		for _, c := range cases {
			if got := delta(c.service, c.metric, c.labels); got != c.want {
				t.Errorf("%s %s%v moved by %v, want %v", c.service, c.metric, c.labels, got, c.want)
			}
		}
		for _, name := range []string{"pgxpool_acquired_conns", "redis_pool_connections"} {
			if _, ok := after["auth"][name]; !ok {
				t.Errorf("auth does not export %s", name)
			}
		}
		for service, fams := range after {
			for name, fam := range fams {
				for _, m := range fam.GetMetric() {
					for _, l := range m.GetLabel() {
						if regexp.MustCompile(`/\d+`).MatchString(l.GetValue()) {
							t.Errorf("%s %s has a raw path or id in label %s=%q", service, name, l.GetName(), l.GetValue())
						}
					}
				}
			}
		}

		t.Run("every metric the dashboards and alerts use is exported", func(t *testing.T) {
			exported := map[string]bool{}
			for _, fams := range after {
				for name, fam := range fams {
					exported[name] = true
					if fam.GetType() == dto.MetricType_HISTOGRAM {
						for _, suffix := range []string{"_bucket", "_count", "_sum"} {
							exported[name+suffix] = true
						}
					}
				}
			}
			for _, m := range observabilityMetrics(t) {
				if !exported[m] {
					t.Errorf("deploy/observability uses %s, which no service exports", m)
				}
			}
		})
	})
}

// findLogLine polls the service's log for a JSON line match accepts.
func findLogLine(t *testing.T, s *stack.Stack, service string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	var found map[string]any
	err := testkit.Poll(context.Background(), 10*time.Second, func(context.Context) error {
		data, err := os.ReadFile(s.Services[service].LogPath())
		if err != nil {
			return err
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && match(m) {
				found = m
				return nil
			}
		}
		return fmt.Errorf("no matching line in the %s log", service)
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// selectorRe finds metric names in PromQL: every metric in
// deploy/observability is written with a label selector, name{...}.
var selectorRe = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)

// observabilityMetrics parses the alert rules and dashboards and returns the
// metric names their expressions use; it fails t when a file does not parse
// or lacks what Prometheus and Grafana need.
func observabilityMetrics(t *testing.T) []string {
	t.Helper()
	root, err := stack.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy", "observability")
	var exprs []string

	raw, err := os.ReadFile(filepath.Join(dir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.UnmarshalWithOptions(raw, &rules, yaml.Strict()); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alerts.yaml: rule %q in %q lacks alert, expr, severity or summary", r.Alert, g.Name)
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("alerts.yaml: rule %q: for %q: %v", r.Alert, r.For, err)
				}
			}
			exprs = append(exprs, r.Expr)
		}
	}
	if alerts == 0 {
		t.Error("alerts.yaml has no rules")
	}

	dashboards, _ := filepath.Glob(filepath.Join(dir, "dashboards", "*.json"))
	if len(dashboards) == 0 {
		t.Error("no dashboards in deploy/observability/dashboards")
	}
	for _, path := range dashboards {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Title  string `json:"title"`
			UID    string `json:"uid"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
			continue
		}
		if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
			t.Errorf("%s: needs a title, a uid and panels", filepath.Base(path))
		}
		for _, p := range d.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", filepath.Base(path), p.Title)
			}
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
		}
	}

	seen := map[string]bool{}
	for _, e := range exprs {
		if !strings.Contains(e, "{") {
			t.Errorf("expression without a selector (write metrics as name{...}): %s", e)
		}
		for _, m := range selectorRe.FindAllStringSubmatch(e, -1) {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// TestObservabilityFilesParse checks the alert rules and dashboards without
// starting the system (the end-to-end test also checks their metrics exist).
func TestObservabilityFilesParse(t *testing.T) {
	if got := observabilityMetrics(t); len(got) == 0 {
		t.Fatal("the alert rules and dashboards use no metric")
	}
}

// missingParents reports a span whose parent has not arrived yet; root is the
// caller's span, which is never exported.
func missingParents(spans []otlpSpan, root string) error {
	ids := map[string]bool{}
	for _, sp := range spans {
		ids[sp.ID] = true
	}
	for _, sp := range spans {
		if sp.Parent != root && !ids[sp.Parent] {
			return fmt.Errorf("span %s %q waits for its parent %s", sp.Service, sp.Name, sp.Parent)
		}
	}
	return nil
}
