package agents_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// relay calls next with its text (or, when next is "", sleeps until its
// deadline); it reports usage of its own, so that a caller's result shows
// its callees' too.
func relay(name, next string, calls *atomic.Int32) agents.Agent {
	return agents.Func(schemas.AgentContract{
		Name: name, Capability: schemas.CapTransformation, Description: "passes its text on",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		if calls != nil {
			calls.Add(1)
		}
		s, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		if next == "" {
			<-ctx.Done()
			return schemas.AgentResult{}, ctx.Err()
		}
		res, err := ec.Call(ctx, schemas.AgentNamed(next), schemas.TaskRequest{Inputs: textIn(s + ">" + name)})
		if err != nil {
			return schemas.AgentResult{}, err
		}
		return schemas.AgentResult{Success: true, Outputs: res.Outputs}, nil
	})
}

// A chain A -> B -> C whose deadline expires at the bottom (C) is reported
// at the top: A's result carries C's timeout, with the path of calls.
func TestCallChainDeadlineReportedAtTop(t *testing.T) {
	m := newMesh(t)
	var cCalls atomic.Int32
	m.serve(t, relay("ChainA", "ChainB", nil))
	m.serve(t, relay("ChainB", "ChainC", nil))
	m.serve(t, relay("ChainC", "", &cCalls))
	start := time.Now()
	deadline := start.Add(2 * time.Second)
	ev := task(t, schemas.TaskRequest{Inputs: textIn("x")}, bus.ExtDeadline, deadline.UTC().Format(time.RFC3339Nano))
	r := m.call(t, "ChainA", ev)
	t.Log(r.Result.Error.Message)
	wantFailure(t, r, schemas.CodeTimeout, "ChainA calling ChainB", "ChainB calling ChainC", "for ChainC did not finish")
	if cCalls.Load() != 1 {
		t.Errorf("ChainC ran %d times; want 1", cCalls.Load())
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("the timeout came %v after the call; the deadline was 2s", took)
	}
}

// selfCaller calls itself until its param depth is 0; each level reports
// 10+5 tokens and 0.01 dollars, and the top answers with the levels seen.
func selfCaller(name string) agents.Agent {
	return agents.Func(schemas.AgentContract{
		Name: name, Capability: schemas.CapTransformation, Description: "calls itself",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		s, _ := ec.Text("text")
		n, _ := strconv.Atoi(ec.Param("depth"))
		own := schemas.Metrics{Tokens: schemas.Tokens{Prompt: 10, Completion: 5}, Cost: 0.01}
		if n == 0 {
			return schemas.AgentResult{Success: true, Metrics: own, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(s+".", name)}}, nil
		}
		res, err := ec.Call(ctx, schemas.AgentNamed(name), schemas.TaskRequest{Inputs: textIn(s + "."), Params: map[string]any{"depth": n - 1}})
		if err != nil {
			return schemas.AgentResult{}, err
		}
		return schemas.AgentResult{Success: true, Metrics: own, Outputs: res.Outputs}, nil
	})
}

// An agent with one slot calls itself three deep and completes: a caller
// gives its slot back while it waits. Every level's usage adds up at the top.
func TestCallSelfWithOneSlot(t *testing.T) {
	m := newMesh(t)
	m.serve(t, selfCaller("Selfish"), agents.WithConcurrency(1))
	ev := task(t, schemas.TaskRequest{Inputs: textIn("go"), Params: map[string]any{"depth": 3}},
		bus.ExtDeadline, time.Now().Add(8*time.Second).UTC().Format(time.RFC3339Nano))
	r := m.call(t, "Selfish", ev)
	if !r.Result.Success {
		t.Fatalf("self-call with one slot: %+v", r.Result.Error)
	}
	if got, _ := r.Result.Outputs["text"].Text(); got != "go...." {
		t.Errorf("text = %q; want go.... (four levels)", got)
	}
	if tk := r.Result.Metrics.Tokens; tk.Prompt != 40 || tk.Completion != 20 {
		t.Errorf("tokens = %+v; want the four levels' 40+20", tk)
	}
	if c := r.Result.Metrics.Cost; c < 0.0399 || c > 0.0401 {
		t.Errorf("cost = %v; want the four levels' 0.04", c)
	}
}

// A chain deeper than its limit is refused with call_depth, and the code
// reaches the top.
func TestCallDepthLimit(t *testing.T) {
	m := newMesh(t)
	m.serve(t, selfCaller("Deep"), agents.WithCallLimits(2, 16))
	ev := task(t, schemas.TaskRequest{Inputs: textIn("go"), Params: map[string]any{"depth": 5}})
	r := m.call(t, "Deep", ev)
	wantFailure(t, r, schemas.CodeCallDepth, "2 calls deep", "limit is 2 (maxcalldepth)")
	// The limit travels with the chain: a task that claims to be deeper
	// than its own limit is refused before it runs.
	ev = task(t, schemas.TaskRequest{Inputs: textIn("go")}, bus.ExtCallDepth, "3", bus.ExtMaxCallDepth, "2")
	wantFailure(t, m.call(t, "Deep", ev), schemas.CodeCallDepth, "3 calls deep", "limit of 2")
	ev = task(t, schemas.TaskRequest{Inputs: textIn("go")}, bus.ExtCallDepth, "two")
	wantFailure(t, m.call(t, "Deep", ev), schemas.CodeMalformedEvent, `calldepth "two"`)
}

// A call by output type goes to an agent offering it, another agent before
// the caller itself; a task's calls past its fan-out are refused.
func TestCallByOutputAndFanout(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Shouter"))
	var second error
	caller := agents.Func(schemas.AgentContract{
		Name: "Asker", Capability: schemas.CapTransformation, Description: "asks whoever offers TEXT",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		s, _ := ec.Text("text")
		res, err := ec.Call(ctx, schemas.Offering(schemas.TypeText), schemas.TaskRequest{Inputs: textIn(s)})
		if err != nil {
			return schemas.AgentResult{}, err
		}
		_, second = ec.Call(ctx, schemas.Offering(schemas.TypeText), schemas.TaskRequest{Inputs: textIn(s)})
		return schemas.AgentResult{Success: true, Summary: "asked " + res.Agent, Outputs: res.Outputs}, nil
	})
	m.serve(t, caller, agents.WithCallLimits(4, 1))
	r := m.call(t, "Asker", task(t, schemas.TaskRequest{Inputs: textIn("hi")}))
	if !r.Result.Success || r.Result.Summary != "asked Shouter" {
		t.Fatalf("result = %+v; want a success that asked Shouter", r.Result)
	}
	if got, _ := r.Result.Outputs["text"].Text(); got != "HI" {
		t.Errorf("text = %q; want HI", got)
	}
	if !errors.Is(second, &schemas.ResultError{Code: schemas.CodeCallFanout}) || !strings.Contains(second.Error(), "made 1 calls already") {
		t.Errorf("second call: %v; want call_fanout", second)
	}
	var ec schemas.ExecutionContext
	if _, err := ec.Call(context.Background(), schemas.AgentNamed("Shouter"), schemas.TaskRequest{}); !errors.Is(err, schemas.ErrNoCaller) {
		t.Errorf("Call outside a runtime: %v; want ErrNoCaller", err)
	}
}
