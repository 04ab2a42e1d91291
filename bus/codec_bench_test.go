package bus_test

import (
	"testing"

	"github.com/agentmesh/agentmesh/internal/benchsuite"
)

// BenchmarkCodecRoundTrip compares the mesh codec (binary mode: build, Encode,
// Decode, DataAs) with sdk-go in structured mode (build, json.Marshal,
// json.Unmarshal, DataAs) for the same task event; `agentmesh bench` prints
// the ratio.
//
//	go test -run '^$' -bench CodecRoundTrip -benchmem ./bus/
func BenchmarkCodecRoundTrip(b *testing.B) {
	p := benchsuite.Codec()
	b.Run("sdkgo-structured", p.Baseline)
	b.Run("agentmesh", p.Mesh)
}
