package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestTimedOutSubPipelineCancelsChild: a step of kind pipeline that times
// out cancels its child run <run>-<step> (and a for_each's running item
// children): the agent of the child's running step is asked to stop its
// task, and the child fails at once, not at its own 30 s timeout, its step
// with code cancelled and a reason naming the parent run and step.
func TestTimedOutSubPipelineCancelsChild(t *testing.T) {
	m := meshtest.New(t)
	stopped := make(chan error, 8)
	m.Agent(t, schemas.AgentContract{Name: "Holder", Capability: schemas.CapTransformation, Description: "holds until stopped",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}, TimeoutMS: 30_000},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-ctx.Done()
			stopped <- context.Cause(ctx)
			return schemas.AgentResult{}, ctx.Err()
		}, 8)
	o := m.Orchestrator(t, []string{"Holder"})
	child := client.NewPipeline("hold").SeedValue("text", schemas.TypeText, "", "x").
		Step("hold", "Holder").Input("text", "seed.text").Timeout(30 * time.Second).MustBuild()
	// A child whose running step is a for_each of the agent: each running
	// item's task is asked to stop.
	eachChild := client.NewPipeline("hold-each").Var("words", []any{"a", "b"}).
		Step("hold", "Holder").ForEach("vars.words", 2).Timeout(30 * time.Second).MustBuild()

	tests := []struct {
		name     string
		spec     pipelinespec.PipelineSpec
		children func(run string) []string
		stops    int // tasks asked to stop (0: one a child)
	}{
		{"pipeline step", client.NewPipeline("parent").SubPipeline("sub", child).Timeout(500 * time.Millisecond).MustBuild(),
			func(run string) []string { return []string{run + "-sub"} }, 0},
		{"for_each of pipelines", client.NewPipeline("parent-each").Var("words", []any{"a", "b"}).
			SubPipeline("sub", child).ForEach("vars.words", 2).Timeout(500 * time.Millisecond).MustBuild(),
			func(run string) []string { return []string{run + "-sub-0", run + "-sub-1"} }, 0},
		{"child running a for_each", client.NewPipeline("parent-of-each").SubPipeline("sub", eachChild).Timeout(500 * time.Millisecond).MustBuild(),
			func(run string) []string { return []string{run + "-sub"} }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := m.Submit(t, tt.spec, "")
			r := meshtest.WaitRun(t, o.Store(), run, 10*time.Second)
			if r.Status != schemas.RunFailed || r.Steps["sub"].Code != schemas.CodeTimeout {
				t.Fatalf("parent run %s, step %+v; want failed with timeout", r.Status, r.Steps["sub"])
			}
			ended := time.Now()
			for _, id := range tt.children(run) {
				c := meshtest.WaitRun(t, o.Store(), id, 10*time.Second)
				st := c.Steps["hold"]
				if c.Status != schemas.RunCancelled || c.Code != schemas.CodeCancelled || st.Status != schemas.StepFailed || st.Code != schemas.CodeCancelled {
					t.Fatalf("child %s: run %s (%s), step %+v; want cancelled, the step cancelled", id, c.Status, c.Code, st)
				}
				for _, want := range []string{run, `step "sub"`, "timed out"} {
					if !strings.Contains(st.Error, want) || !strings.Contains(c.Error, want) {
						t.Errorf("child %s: step error %q / run error %q do not name %q", id, st.Error, c.Error, want)
					}
				}
			}
			if took := time.Since(ended); took > 5*time.Second {
				t.Errorf("the children ended %v after the parent; want at once, not at their 30s timeout", took)
			}
			stops := tt.stops
			if stops == 0 {
				stops = len(tt.children(run))
			}
			for range stops {
				select {
				case cause := <-stopped:
					if !errors.Is(cause, agents.ErrCancelled) {
						t.Errorf("the child's task stopped with %v, want a cancel request", cause)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the agent of the child's step was not asked to stop its task")
				}
			}
		})
	}
}
