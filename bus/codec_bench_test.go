package bus_test

import (
	"encoding/json"
	"testing"
	"time"

	ce "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/agentmesh/agentmesh/bus"
)

var benchTaskData = []byte(`{"inputs":{"images":{"data_type":"FILE_IDS","content_type_hint":"images","value":{"ids":["a","b","c","d","e"],"content_type":"images","count":5},"source":"x","produced_at":"2026-01-01T00:00:00Z"}},"params":{"query":"sunset"},"instruction":"find sunsets","timeout_ms":30000}`)

// benchTask is the benchmark's own view of a task.requested payload.
type benchTask struct {
	Inputs map[string]struct {
		DataType        string `json:"data_type"`
		ContentTypeHint string `json:"content_type_hint"`
		Value           struct {
			IDs         []string `json:"ids"`
			ContentType string   `json:"content_type"`
			Count       int      `json:"count"`
		} `json:"value"`
		Source     string    `json:"source"`
		ProducedAt time.Time `json:"produced_at"`
	} `json:"inputs"`
	Params      map[string]any `json:"params"`
	Instruction string         `json:"instruction"`
	TimeoutMS   int            `json:"timeout_ms"`
}

// BenchmarkCodecRoundTrip compares the mesh codec (binary mode: build, Encode,
// Decode, DataAs) with sdk-go in structured mode (build, json.Marshal,
// json.Unmarshal, DataAs) for the same task event. Both start from the same
// JSON data bytes and set the same attributes and extensions.
//
//	go test -run '^$' -bench CodecRoundTrip -benchmem ./bus/
//
// The ratio is the agentmesh ns/op over the sdkgo-structured ns/op; it is
// also reported as a metric on the agentmesh line (ratio-vs-sdkgo) when both
// run in one invocation.
func BenchmarkCodecRoundTrip(b *testing.B) {
	var sdkNsOp float64
	b.Run("sdkgo-structured", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			ev := ce.New()
			ev.SetID(uuid.NewString())
			ev.SetSource("agentmesh/orchestrator")
			ev.SetType(bus.TypeTaskRequested)
			ev.SetTime(time.Now().UTC())
			ev.SetExtension(bus.ExtConversationID, "c-1")
			ev.SetExtension(bus.ExtReplyTo, "mesh.result.orchestrator.c-1")
			if err := ev.SetData(ce.ApplicationJSON, benchTaskData); err != nil {
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
			var task benchTask
			if err := got.DataAs(&task); err != nil {
				b.Fatal(err)
			}
			if task.TimeoutMS != 30000 {
				b.Fatal("bad decode")
			}
		}
		sdkNsOp = float64(time.Since(start).Nanoseconds()) / float64(b.N)
	})
	b.Run("agentmesh", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			e, err := bus.NewEvent(bus.TypeTaskRequested, "agentmesh/orchestrator", benchTaskData)
			if err != nil {
				b.Fatal(err)
			}
			e.SetExt(bus.ExtConversationID, "c-1")
			e.SetExt(bus.ExtReplyTo, "mesh.result.orchestrator.c-1")
			msg, err := bus.Encode("mesh.task.search", e)
			if err != nil {
				b.Fatal(err)
			}
			got, err := bus.Decode(msg)
			if err != nil {
				b.Fatal(err)
			}
			var task benchTask
			if err := got.DataAs(&task); err != nil {
				b.Fatal(err)
			}
			if task.TimeoutMS != 30000 {
				b.Fatal("bad decode")
			}
		}
		if sdkNsOp > 0 {
			own := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			b.ReportMetric(own/sdkNsOp, "ratio-vs-sdkgo")
		}
	})
}
