package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestLoopsAndSubPipelineSurviveSIGKILL runs a for_each, then a
// sub-pipeline, then a repeat on `agentmesh orchestrator` processes: the
// replica running the for_each is SIGKILLed half way through its items,
// the next one while the sub-pipeline's child runs; a third replica
// finishes the run, with every item merged once.
func TestLoopsAndSubPipelineSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills replicas")
	}
	m := meshtest.New(t)
	f := &meshtest.Filer{Delay: 40 * time.Millisecond}
	m.Agent(t, f.Contract(), f.Execute, 16)
	m.Run(t, text.New(), agents.WithConcurrency(4))
	var calls atomic.Int64
	m.Appender(t, &calls)
	bin := buildBinary(t)
	store := state.New(m.Res.Conversations, m.Res.Runs)

	var lines []string
	for i := range 60 {
		lines = append(lines, fmt.Sprintf("doc-%02d", i))
	}
	child := client.NewPipeline("slow-shout").
		SeedValue("text", schemas.TypeText, "", "x").
		Step("up", text.Name).Param("op", "upper").Param("delay_ms", 1500).Input("text", "seed.text").
		MustBuild()
	spec := client.NewPipeline("survivor").
		SeedValue("ids", schemas.TypeText, "", strings.Join(lines, "\n")).
		Step("each", meshtest.FilerName).ForEach("seed.ids", 4).
		SubPipeline("sub", child).After("each").MapIn("text", "text:go").MapOut("out", "up.text").
		Step("grow", "Appender").After("sub").Input("text", "sub.out").RepeatUntil("iteration >= 3", 5).
		MustBuild()

	a := startReplica(t, bin, m.Srv.URL())
	id := m.Submit(t, spec, "survivor")
	ctx := context.Background()
	fixture.Eventually(t, "a quarter of the items ended", func() bool {
		p, _, err := store.LoopProgress(ctx, id, "each")
		return err == nil && p.Low >= 15
	})
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	b := startReplica(t, bin, m.Srv.URL())
	fixture.Eventually(t, "the child run under way", func() bool {
		h, _, err := store.Header(ctx, id+"-sub")
		return err == nil && !h.Done() && h.Wave == 0
	})
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-b.done
	startReplica(t, bin, m.Srv.URL())

	r := meshtest.WaitRun(t, store, id, 60*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	fc, err := r.Steps["each"].Outputs["files"].Files()
	if err != nil {
		t.Fatal(err)
	}
	if got := fc.IDs(); len(got) != 60 || got[0] != "doc-00" || got[59] != "doc-59" {
		t.Errorf("merged %d ids, want doc-00..doc-59", len(got))
	}
	if got := meshtest.TextOut(t, r, "grow"); got != "GOxxx" {
		t.Errorf("grow = %q, want GOxxx", got)
	}
	t.Logf("%d item tasks ran for 60 items", f.Done.Load())
}
