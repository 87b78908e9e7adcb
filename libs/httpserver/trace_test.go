package httpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventreg/eventreg/libs/httpserver"
)

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// useGlobals installs the W3C propagator and a recording tracer provider, as
// telemetry.Setup does, for the test's duration.
func useGlobals(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	prevProp, prevTP := otel.GetTextMapPropagator(), otel.GetTracerProvider()
	rec := tracetest.NewSpanRecorder()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTextMapPropagator(prevProp); otel.SetTracerProvider(prevTP) })
	return rec
}

// traced serves GET /seen on a server with tracing set as given; /seen
// answers with the trace and span ids of the handler's context.
func traced(t *testing.T, tracing bool) *httpserver.Server {
	t.Helper()
	cfg := httpserver.Config{PublicAddr: "127.0.0.1:0", InternalAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0", BodyLimit: 1024,
		ReadHeaderTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		IdleTimeout: 5 * time.Second, ShutdownTimeout: 5 * time.Second, Tracing: tracing}
	s := httpserver.New(cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), "test")
	s.Public.GET("/seen", func(c *gin.Context) {
		sc := trace.SpanContextFromContext(c.Request.Context())
		c.String(http.StatusOK, sc.TraceID().String()+" "+sc.SpanID().String())
	})
	start(t, s)
	return s
}

func get(t *testing.T, url string, traceparent bool) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if traceparent {
		req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestTracingOffTakesUpTheCallersTraceContextOnly(t *testing.T) {
	rec := useGlobals(t)
	s := traced(t, false)
	if got := get(t, "http://"+s.PublicAddr()+"/seen", true); got != callerTrace+" "+callerSpan {
		t.Errorf("with a traceparent the handler saw %q, want the caller's ids", got)
	}
	if got := get(t, "http://"+s.PublicAddr()+"/seen", false); got != (trace.TraceID{}).String()+" "+(trace.SpanID{}).String() {
		t.Errorf("without a traceparent the handler saw %q, want no trace", got)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("tracing off made %d spans", n)
	}
}

func TestTracingOnMakesASpanUnderTheCaller(t *testing.T) {
	rec := useGlobals(t)
	s := traced(t, true)
	got := get(t, "http://"+s.PublicAddr()+"/seen", true)
	if got[:len(callerTrace)] != callerTrace || got == callerTrace+" "+callerSpan {
		t.Errorf("the handler saw %q, want the caller's trace with a span of its own", got)
	}
	get(t, "http://"+s.OpsAddr()+"/healthz", false)
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("want 1 span (the probe is not traced), got %d", len(spans))
	}
	sp := spans[0]
	if sp.Parent().SpanID().String() != callerSpan || sp.SpanContext().TraceID().String() != callerTrace || sp.Name() != "GET /seen" {
		t.Errorf("span %q parent %s trace %s, want GET /seen under the caller", sp.Name(), sp.Parent().SpanID(), sp.SpanContext().TraceID())
	}
}
