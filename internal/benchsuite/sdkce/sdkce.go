// Package sdkce is the CloudEvents sdk-go side of the codec benchmark. It
// is a package of its own so that benchsuite, which the agentmesh binary
// runs, does not import sdk-go: the binary must not link it, and only the
// go test benchmarks compare with it.
package sdkce

import (
	"encoding/json"
	"testing"
	"time"

	ce "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/agentmesh/agentmesh/bus"
)

// StructuredRoundTrip returns a benchmark body that, per iteration, builds
// a task event with data (a JSON task) and the mesh's extensions with
// sdk-go, encodes it in structured mode (json.Marshal), decodes it
// (json.Unmarshal) and hands its DataAs to check.
func StructuredRoundTrip(data []byte, check func(dataAs func(any) error) error) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ev := ce.New()
			ev.SetID(uuid.NewString())
			ev.SetSource("agentmesh/orchestrator")
			ev.SetType(bus.TypeTaskRequested)
			ev.SetTime(time.Now().UTC())
			ev.SetExtension(bus.ExtConversationID, "c-1")
			ev.SetExtension(bus.ExtReplyTo, "mesh.result.TextAgent.orchestrator.c-1")
			if err := ev.SetData(ce.ApplicationJSON, data); err != nil {
				b.Fatal(err)
			}
			body, err := json.Marshal(ev)
			if err != nil {
				b.Fatal(err)
			}
			var got ce.Event
			if err := json.Unmarshal(body, &got); err != nil {
				b.Fatal(err)
			}
			if err := check(got.DataAs); err != nil {
				b.Fatal(err)
			}
		}
	}
}
