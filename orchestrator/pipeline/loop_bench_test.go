package pipeline_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkForEach measures a for_each of 1,000 items of an agent that
// answers at once, 8 at a time: the orchestration cost per item (its
// result applied, its progress written, the next item published) and of
// the merge at the end. The metric is us/item.
func BenchmarkForEach(b *testing.B) {
	m := meshtest.New(b)
	f := &meshtest.Filer{Delay: time.Microsecond}
	m.Agent(b, f.Contract(), f.Execute, 32)
	o := m.Orchestrator(b, []string{meshtest.FilerName})
	var lines []string
	for i := range 1000 {
		lines = append(lines, fmt.Sprintf("doc-%04d", i))
	}
	spec := client.NewPipeline("bench-each").
		SeedValue("ids", schemas.TypeText, "", strings.Join(lines, "\n")).
		Step("each", meshtest.FilerName).ForEach("seed.ids", 8).
		MustBuild()
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		r := meshtest.WaitRun(b, o.Store(), m.Submit(b, spec, fmt.Sprintf("bench-each-%d", i)), time.Minute)
		total += time.Since(start)
		if r.Status != schemas.RunCompleted {
			b.Fatalf("run %s: %s", r.Status, r.Error)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N*1000), "us/item")
}
