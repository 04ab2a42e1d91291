package bus_test

import (
	"testing"

	"github.com/agentmesh/agentmesh/internal/benchsuite"
	"github.com/agentmesh/agentmesh/internal/benchsuite/sdkce"
)

// BenchmarkCodecRoundTrip compares the mesh codec (binary mode: build, Encode,
// Decode, DataAs) with sdk-go in structured mode (build, json.Marshal,
// json.Unmarshal, DataAs) for the same task event, as the codec scenario of
// go test -bench Suite ./internal/benchsuite/ does.
//
//	go test -run '^$' -bench CodecRoundTrip -benchmem ./bus/
func BenchmarkCodecRoundTrip(b *testing.B) {
	p := benchsuite.Codec(sdkce.StructuredRoundTrip)
	b.Run("sdkgo-structured", p.Baseline)
	b.Run("agentmesh", p.Mesh)
}
