// Package export installs the OpenTelemetry SDK in a process of the mesh:
// spans go by OTLP over HTTP (protobuf) to the endpoint the standard
// variables name, and nowhere when none is set. It is the only package of
// agentmesh that links the SDK and the exporter; libraries use the API
// through package telemetry.
package export

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/telemetry"
)

// The standard variables Setup reads (the exporter and the SDK read the
// rest: OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT,
// OTEL_TRACES_SAMPLER, OTEL_BSP_SCHEDULE_DELAY, OTEL_RESOURCE_ATTRIBUTES...).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
)

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is set, and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none turns them off.
func Enabled() bool {
	if strings.EqualFold(os.Getenv(EnvSDKDisabled), "true") || strings.EqualFold(os.Getenv(EnvTracesExporter), "none") {
		return false
	}
	return os.Getenv(EnvEndpoint) != "" || os.Getenv(EnvTracesEndpoint) != ""
}

// Setup installs, when Enabled, a TracerProvider exporting by OTLP/HTTP
// with service (OTEL_SERVICE_NAME overrides it) as service.name, the
// IDGenerator, and the W3C Trace Context propagator, all as the globals.
// shutdown flushes the spans still queued and stops the exporter; it is a
// no-op when tracing is off. Only http/protobuf is spoken: another
// OTEL_EXPORTER_OTLP_PROTOCOL is an error saying what to set.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	nop := func(context.Context) error { return nil }
	if !Enabled() {
		return nop, nil
	}
	for _, env := range []string{EnvTracesProtocol, EnvProtocol} {
		if p := os.Getenv(env); p != "" {
			if p != "http/protobuf" {
				return nop, fmt.Errorf("%s=%q: agentmesh exports traces by OTLP over HTTP only; set it to http/protobuf and point %s at the collector's HTTP port (4318)", env, p, EnvEndpoint)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nop, fmt.Errorf("traces: OTLP exporter: %w (check %s)", err, EnvEndpoint)
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(service)), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nop, fmt.Errorf("traces: resource (check OTEL_RESOURCE_ATTRIBUTES and %s): %w", EnvServiceName, err)
	}
	tp := NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Shutdown, nil
}

// NewTracerProvider returns an SDK TracerProvider with opts and the
// IDGenerator agentmesh needs (see IDGenerator): use it, or add
// sdktrace.WithIDGenerator(IDGenerator()), when installing a provider of
// your own.
func NewTracerProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append(opts, sdktrace.WithIDGenerator(IDGenerator()))...)
}

// IDGenerator returns the SDK ID generator that gives the spans of
// pipeline runs and steps the ids derived from their run and step ids
// (telemetry.WantedIDs), so every replica names them alike and a step's
// task can name its span as parent before it is recorded; every other span
// gets random ids.
func IDGenerator() sdktrace.IDGenerator { return idGenerator{} }

type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, sid, ok := telemetry.WantedIDs(ctx)
	if !ok {
		return randomTraceID(), randomSpanID()
	}
	if !tid.IsValid() {
		tid = randomTraceID()
	}
	if !sid.IsValid() {
		sid = randomSpanID()
	}
	return tid, sid
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if _, sid, ok := telemetry.WantedIDs(ctx); ok && sid.IsValid() {
		return sid
	}
	return randomSpanID()
}

func randomTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		a, b := rand.Uint64(), rand.Uint64()
		for i := range 8 {
			id[i], id[8+i] = byte(a>>(56-8*i)), byte(b>>(56-8*i))
		}
	}
	return id
}

func randomSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		a := rand.Uint64()
		for i := range 8 {
			id[i] = byte(a >> (56 - 8*i))
		}
	}
	return id
}
