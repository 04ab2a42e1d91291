package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Log formats and levels the commands take (--log-format, --log-level).
var (
	LogFormats = []string{"text", "json"}
	LogLevels  = []string{"debug", "info", "warn", "error"}
)

// ParseLogLevel reads one of LogLevels.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q is not one of %s", s, strings.Join(LogLevels, ", "))
}

// NewLogger returns a logger writing to w in format ("text" or "json")
// from level on, through Handler, so every line written with a context
// carries its trace and the ids WithLogAttrs put there.
func NewLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	f, err := ParseLogFormat(format)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: level}
	if f == "json" {
		return slog.New(Handler(slog.NewJSONHandler(w, opts))), nil
	}
	return slog.New(Handler(slog.NewTextHandler(w, opts))), nil
}

// ParseLogFormat reads one of LogFormats ("" is text).
func ParseLogFormat(s string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(s)); f {
	case "text", "":
		return "text", nil
	case "json":
		return f, nil
	}
	return "", fmt.Errorf("log format %q is not one of %s", s, strings.Join(LogFormats, ", "))
}

// Log attribute keys the Handler adds.
const (
	LogTraceID = "trace_id"
	LogSpanID  = "span_id"
)

type logAttrsKey struct{}

// WithLogAttrs returns ctx carrying args (slog key-value pairs or Attrs)
// after those it already carries: the Handler adds them to every line
// written with the context, so a task's, run's or conversation's ids are
// on every line about it.
func WithLogAttrs(ctx context.Context, args ...any) context.Context {
	prev, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	r := slog.Record{}
	r.Add(args...)
	attrs := make([]slog.Attr, 0, len(prev)+r.NumAttrs())
	attrs = append(attrs, prev...)
	r.Attrs(func(a slog.Attr) bool {
		if !a.Value.Equal(slog.StringValue("")) {
			attrs = append(attrs, a)
		}
		return true
	})
	return context.WithValue(ctx, logAttrsKey{}, attrs)
}

// Handler wraps next so that each record written with a context gets the
// ids of WithLogAttrs and, when the context holds a valid span, trace_id
// and span_id (W3C hex, as the OTLP backends show them). Wrapping a
// Handler again returns it as it is.
func Handler(next slog.Handler) slog.Handler {
	if h, ok := next.(ctxHandler); ok {
		return h
	}
	return ctxHandler{next: next}
}

// Logger returns l with its handler wrapped by Handler.
func Logger(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(ctxHandler); ok {
		return l
	}
	return slog.New(Handler(l.Handler()))
}

type ctxHandler struct{ next slog.Handler }

func (h ctxHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	attrs, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	sc := trace.SpanContextFromContext(ctx)
	if len(attrs) > 0 || sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(attrs...)
		if sc.IsValid() {
			r.AddAttrs(slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
		}
	}
	return h.next.Handle(ctx, r)
}

func (h ctxHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return ctxHandler{next: h.next.WithAttrs(attrs)}
}

func (h ctxHandler) WithGroup(name string) slog.Handler {
	return ctxHandler{next: h.next.WithGroup(name)}
}
