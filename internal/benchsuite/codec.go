package benchsuite

import (
	"errors"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
)

// TaskData is a task.requested payload with a 5-ID collection.
var TaskData = []byte(`{"inputs":{"images":{"data_type":"FILE_IDS","content_type_hint":"images","value":{"ids":["a","b","c","d","e"],"content_type":"images","count":5},"source":"x","produced_at":"2026-01-01T00:00:00Z"}},"params":{"query":"sunset"},"instruction":"find sunsets","timeout_ms":30000}`)

// benchTask is the benchmark's own view of TaskData.
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

// SDKRoundTrip makes the sdk-go side of Codec (sdkce.StructuredRoundTrip).
type SDKRoundTrip func(data []byte, check func(dataAs func(any) error) error) func(b *testing.B)

// Codec compares the mesh codec (binary mode: build, Encode, Decode, DataAs)
// with sdk-go in structured mode (build, json.Marshal, json.Unmarshal,
// DataAs) for the same task event, attributes and extensions. sdk is
// sdkce.StructuredRoundTrip, passed in so that this package, which the
// agentmesh binary runs, does not link sdk-go; the scenario runs under
// go test only.
func Codec(sdk SDKRoundTrip) Pair {
	check := func(task benchTask) error {
		if task.TimeoutMS != 30000 || len(task.Inputs["images"].Value.IDs) != 5 {
			return errors.New("the task did not survive the round trip")
		}
		return nil
	}
	return Pair{
		ID: "codec", Name: "codec round trip (task, 5 IDs)", Unit: "round trip", Baseliner: "sdk-go structured json.Marshal/Unmarshal",
		Baseline: sdk(TaskData, func(dataAs func(any) error) error {
			var task benchTask
			if err := dataAs(&task); err != nil {
				return err
			}
			return check(task)
		}),
		Mesh: func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e, err := bus.NewEvent(bus.TypeTaskRequested, "agentmesh/orchestrator", TaskData)
				if err != nil {
					fail(b, err)
				}
				e.SetExt(bus.ExtConversationID, "c-1")
				e.SetExt(bus.ExtReplyTo, "mesh.result.TextAgent.orchestrator.c-1")
				msg, err := bus.Encode("mesh.task.search", e)
				if err != nil {
					fail(b, err)
				}
				got, err := bus.Decode(msg)
				if err != nil {
					fail(b, err)
				}
				var task benchTask
				if err := got.DataAs(&task); err != nil {
					fail(b, err)
				}
				if err := check(task); err != nil {
					fail(b, err)
				}
			}
		},
	}
}
