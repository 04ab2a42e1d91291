package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/telemetry"
)

func TestLoggerAddsTraceAndIDs(t *testing.T) {
	var buf bytes.Buffer
	l, err := telemetry.NewLogger(&buf, "json", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	ctx := telemetry.WithTraceParent(context.Background(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	ctx = telemetry.WithLogAttrs(ctx, "task", "t-1", "run", "")
	ctx = telemetry.WithLogAttrs(ctx, "step", "s1")
	l.With("agent", "A").InfoContext(ctx, "task finished", "outcome", "completed")
	l.Info("no context")
	l.DebugContext(ctx, "below the level")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"msg": "task finished", "agent": "A", "outcome": "completed", "task": "t-1", "step": "s1",
		telemetry.LogTraceID: "0af7651916cd43dd8448eb211c80319c", telemetry.LogSpanID: "b7ad6b7169203331"} {
		if rec[k] != want {
			t.Errorf("%s = %v, want %v (line %s)", k, rec[k], want, lines[0])
		}
	}
	if _, ok := rec["run"]; ok {
		t.Errorf("an empty id is logged: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Errorf("a line without a context has a trace id: %s", lines[1])
	}
	if telemetry.Logger(l) != l {
		t.Error("Logger wrapped an already wrapped logger again")
	}
}

func TestLogFlagsNameTheBadValue(t *testing.T) {
	if _, err := telemetry.ParseLogLevel("loud"); err == nil || !strings.Contains(err.Error(), `"loud"`) || !strings.Contains(err.Error(), "debug, info, warn, error") {
		t.Errorf("ParseLogLevel(loud) = %v", err)
	}
	if _, err := telemetry.NewLogger(nil, "xml", slog.LevelInfo); err == nil || !strings.Contains(err.Error(), `"xml"`) || !strings.Contains(err.Error(), "text, json") {
		t.Errorf("NewLogger(xml) = %v", err)
	}
	for s, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got, err := telemetry.ParseLogLevel(s); err != nil || got != want {
			t.Errorf("ParseLogLevel(%q) = %v, %v", s, got, err)
		}
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := telemetry.WithTraceParent(context.Background(), tp)
	if got := telemetry.TraceParent(ctx); got != tp {
		t.Errorf("TraceParent = %q, want %q", got, tp)
	}
	for _, bad := range []string{"", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "garbage", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"} {
		if sc := trace.SpanContextFromContext(telemetry.WithTraceParent(context.Background(), bad)); sc.IsValid() {
			t.Errorf("WithTraceParent(%q) gave a valid span context", bad)
		}
	}
}

// FuzzTraceParent: any traceparent from the wire is taken or ignored, never
// a panic, and one that is taken is given back in its canonical form.
func FuzzTraceParent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")
	f.Fuzz(func(t *testing.T, tp string) {
		ctx := telemetry.WithTraceParent(context.Background(), tp)
		sc := trace.SpanContextFromContext(ctx)
		out := telemetry.TraceParent(ctx)
		if sc.IsValid() != (out != "") {
			t.Fatalf("%q: valid %v but TraceParent %q", tp, sc.IsValid(), out)
		}
		if out != "" && telemetry.TraceParent(telemetry.WithTraceParent(context.Background(), out)) != out {
			t.Fatalf("%q: %q does not round-trip", tp, out)
		}
	})
}
