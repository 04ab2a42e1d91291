// Package telemetrytest is an OTLP/HTTP trace receiver for tests and
// benchmarks: an HTTP server on the loopback that accepts
// ExportTraceServiceRequest messages (protobuf, optionally gzip) on
// /v1/traces, decodes them with the official OTLP protobuf bindings
// (go.opentelemetry.io/proto/otlp), and keeps the spans.
package telemetrytest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened: ids in lowercase hex (ParentID ""
// for a root), attributes as Go values (string, int64, float64, bool).
type Span struct {
	Service  string
	Name     string
	Kind     string // SPAN_KIND_SERVER, SPAN_KIND_CONSUMER...
	TraceID  string
	SpanID   string
	ParentID string
	Start    time.Time
	End      time.Time
	Error    bool // status code ERROR
	Attrs    map[string]any
}

// Sink is a running receiver. Close it with t.Cleanup (NewSink does).
type Sink struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []Span
}

// NewSink starts a receiver, closed when tb ends.
func NewSink(tb testing.TB) *Sink {
	s := &Sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the receiver's base URL, the value of OTEL_EXPORTER_OTLP_ENDPOINT
// (exporters add /v1/traces).
func (s *Sink) URL() string { return s.srv.URL }

// Spans returns a copy of the spans received so far.
func (s *Sink) Spans() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.spans)
}

// Wait polls until check accepts the spans received, and returns them; it
// fails tb with check's last error after timeout.
func (s *Sink) Wait(tb testing.TB, timeout time.Duration, check func([]Span) error) []Span {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := s.Spans()
		err := check(spans)
		if err == nil {
			return spans
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %s, %d spans received: %v\n%s", timeout, len(spans), err, Dump(spans))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "POST /v1/traces only", http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "Content-Type "+ct+": this receiver takes application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.add(&req)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *Sink) add(req *coltracepb.ExportTraceServiceRequest) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := fmt.Sprint(attrs(rs.GetResource().GetAttributes())["service.name"])
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				got = append(got, Span{
					Service: service, Name: sp.GetName(), Kind: sp.GetKind().String(),
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					ParentID: hex.EncodeToString(sp.GetParentSpanId()),
					Start:    time.Unix(0, int64(sp.GetStartTimeUnixNano())), End: time.Unix(0, int64(sp.GetEndTimeUnixNano())),
					Error: sp.GetStatus().GetCode().String() == "STATUS_CODE_ERROR", Attrs: attrs(sp.GetAttributes()),
				})
			}
		}
	}
	s.mu.Lock()
	s.spans = append(s.spans, got...)
	s.mu.Unlock()
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = x.IntValue
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = x.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = x.BoolValue
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Dump lists spans one a line (service, name, trace, span, parent), for
// failure messages.
func Dump(spans []Span) string {
	var b []byte
	for _, s := range spans {
		b = fmt.Appendf(b, "  %-24s %-36q trace %s span %s parent %s\n", s.Service, s.Name, s.TraceID, s.SpanID, s.ParentID)
	}
	return string(b)
}
