package agents_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkAgentCall measures one task whose Execute calls another agent
// (ec.Call on the durable path) against one task that does the same work
// itself, each published to MESH_TASKS and its result awaited: the
// difference is what an agent-to-agent call costs.
func BenchmarkAgentCall(b *testing.B) {
	m := newMesh(b)
	m.serve(b, echo("BenchCallee"))
	m.serve(b, relay("BenchCaller", "BenchCallee", nil))
	for _, agent := range []string{"BenchCallee", "BenchCaller"} {
		b.Run(agent, func(b *testing.B) {
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				ev := task(b, schemas.TaskRequest{Inputs: textIn(fmt.Sprint("x", i))})
				start := time.Now()
				r := m.call(b, agent, ev)
				times = append(times, time.Since(start))
				if !r.Result.Success {
					b.Fatalf("%s: %+v", agent, r.Result.Error)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(p50(times).Nanoseconds()), "p50-ns")
		})
	}
}

// p50 is the median of times.
func p50(times []time.Duration) time.Duration {
	if len(times) == 0 {
		return 0
	}
	s := slices.Clone(times)
	slices.Sort(s)
	return s[len(s)/2]
}
