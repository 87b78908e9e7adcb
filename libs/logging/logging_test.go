package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/eventreg/eventreg/libs/logging"
	"go.opentelemetry.io/otel/trace"
)

func TestRecordsCarryTraceAndSpanIDs(t *testing.T) {
	var buf bytes.Buffer
	log := logging.New(&buf, slog.LevelInfo, "users")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	log.InfoContext(ctx, "hello", "k", 1)

	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not JSON: %q", buf.String())
	}
	if rec["trace_id"] != tid.String() || rec["span_id"] != sid.String() || rec["service"] != "users" {
		t.Fatalf("missing ids: %v", rec)
	}
}

func TestRecordsWithoutSpanHaveNoIDs(t *testing.T) {
	var buf bytes.Buffer
	logging.New(&buf, slog.LevelInfo, "auth").Info("x")
	var rec map[string]any
	_ = json.Unmarshal(buf.Bytes(), &rec)
	if _, ok := rec["trace_id"]; ok {
		t.Fatalf("unexpected trace_id: %v", rec)
	}
}

func TestParseLevel(t *testing.T) {
	if l, err := logging.ParseLevel("debug"); err != nil || l != slog.LevelDebug {
		t.Fatalf("debug: %v %v", l, err)
	}
	if _, err := logging.ParseLevel("loud"); err == nil {
		t.Fatal("want error for unknown level")
	}
}
