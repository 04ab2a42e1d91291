package export_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/agentmesh/agentmesh/telemetry"
	"github.com/agentmesh/agentmesh/telemetry/export"
	"github.com/agentmesh/agentmesh/telemetry/telemetrytest"
)

// keepProvider restores the global provider Setup replaces.
func keepProvider(t testing.TB) {
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
}

func TestSetupOffWithoutEndpoint(t *testing.T) {
	t.Setenv(export.EnvEndpoint, "")
	t.Setenv(export.EnvTracesEndpoint, "")
	keepProvider(t)
	prev := otel.GetTracerProvider()
	shutdown, err := export.Setup(context.Background(), "agentmesh-test")
	if err != nil || export.Enabled() {
		t.Fatalf("Setup = %v, Enabled %v; want off", err, export.Enabled())
	}
	if otel.GetTracerProvider() != prev {
		t.Error("Setup installed a provider with no endpoint set")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	t.Setenv(export.EnvEndpoint, "http://127.0.0.1:4318")
	t.Setenv(export.EnvSDKDisabled, "true")
	if export.Enabled() {
		t.Error("OTEL_SDK_DISABLED=true does not turn traces off")
	}
}

func TestSetupRefusesGRPC(t *testing.T) {
	t.Setenv(export.EnvEndpoint, "http://127.0.0.1:4317")
	t.Setenv(export.EnvProtocol, "grpc")
	keepProvider(t)
	_, err := export.Setup(context.Background(), "agentmesh-test")
	if err == nil || !strings.Contains(err.Error(), `"grpc"`) || !strings.Contains(err.Error(), "http/protobuf") {
		t.Fatalf("Setup with grpc = %v; want an error naming the value and what to set", err)
	}
}

// Spans reach an OTLP/HTTP receiver with the service name given, or the
// one OTEL_SERVICE_NAME says.
func TestSetupExportsToEndpoint(t *testing.T) {
	for _, tc := range []struct{ env, want string }{{"", "agentmesh-test"}, {"my-agent", "my-agent"}} {
		sink := telemetrytest.NewSink(t)
		t.Setenv(export.EnvEndpoint, sink.URL())
		t.Setenv(export.EnvServiceName, tc.env)
		keepProvider(t)
		shutdown, err := export.Setup(context.Background(), "agentmesh-test")
		if err != nil {
			t.Fatal(err)
		}
		_, span := telemetry.Start(context.Background(), "hello")
		span.End()
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		sink.Wait(t, 5*time.Second, func(spans []telemetrytest.Span) error {
			if len(spans) != 1 || spans[0].Name != "hello" || spans[0].Service != tc.want {
				return fmt.Errorf("want one span hello of %s", tc.want)
			}
			return nil
		})
	}
}
