package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// A task whose first delivery fails after three of its five steps runs
// each step once over both deliveries: the second finds the first three
// recorded in the steps bucket, one key each, and the result is the one a
// run with no failure gives.
func TestStepsRecordedOnceAcrossDeliveries(t *testing.T) {
	m := newMesh(t)
	var (
		mu   sync.Mutex
		ran  = map[string]int{}
		runs int
	)
	contract := schemas.AgentContract{Name: "Stepper", Capability: schemas.CapTransformation, Description: "takes five steps",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	m.serve(t, agents.Func(contract, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		mu.Lock()
		runs++
		first := runs == 1
		mu.Unlock()
		var parts []string
		for i := range 5 {
			if first && i == 3 {
				return schemas.AgentResult{}, agents.Retryable(errors.New("crash after three steps"))
			}
			raw, err := ec.Step(ctx, "model", func(_ context.Context, key string) (any, error) {
				mu.Lock()
				ran[key]++
				mu.Unlock()
				return fmt.Sprintf("answer %d (%s)", i, key), nil
			})
			if err != nil {
				return schemas.AgentResult{}, err
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return schemas.AgentResult{}, err
			}
			parts = append(parts, s)
		}
		return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(strings.Join(parts, "; "), "Stepper")}}, nil
	}), agents.WithBackoff(10*time.Millisecond))

	ev := task(t, schemas.TaskRequest{Inputs: textIn("go")})
	r := m.call(t, "Stepper", ev)
	if !r.Result.Success {
		t.Fatalf("result %+v", r.Result)
	}
	if r.Result.Metrics.Attempt != 2 {
		t.Errorf("attempt %d; want the second delivery to answer", r.Result.Metrics.Attempt)
	}
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprintf("answer %d (%s.model.%d)", i, ev.ID, i))
	}
	if got, _ := r.Result.Outputs["text"].Text(); got != strings.Join(want, "; ") {
		t.Errorf("output %q; want %q", got, strings.Join(want, "; "))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 5 {
		t.Errorf("%d distinct steps ran; want 5: %v", len(ran), ran)
	}
	for k, n := range ran {
		if n != 1 {
			t.Errorf("step %s ran %d times; want once", k, n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := m.js.KeyValue(ctx, m.n.StepsBucket())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range keys.Keys() {
		got = append(got, k)
	}
	slices.Sort(got)
	wantKeys := []string{ev.ID + ".model.0", ev.ID + ".model.1", ev.ID + ".model.2", ev.ID + ".model.3", ev.ID + ".model.4"}
	if !slices.Equal(got, wantKeys) {
		t.Errorf("keys in %s: %v; want %v", m.n.StepsBucket(), got, wantKeys)
	}
	e, err := kv.Get(ctx, ev.ID+".model.1")
	if err != nil {
		t.Fatal(err)
	}
	if wantVal := fmt.Sprintf(`"answer 1 (%s.model.1)"`, ev.ID); string(e.Value()) != wantVal {
		t.Errorf("value of step model.1 is %s; want the step's result as JSON, %s", e.Value(), wantVal)
	}
}

// A step whose result is over the journal's limit fails the task with
// step_too_large, naming the step and the sizes.
func TestStepTooLargeIsRefused(t *testing.T) {
	m := newMesh(t)
	contract := schemas.AgentContract{Name: "Big", Capability: schemas.CapTransformation, Description: "returns too much from a step",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	m.serve(t, agents.Func(contract, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		_, err := ec.Step(ctx, "fetch", func(context.Context, string) (any, error) {
			return strings.Repeat("x", bus.MaxStepValue), nil
		})
		return schemas.AgentResult{}, err
	}))
	ev := task(t, schemas.TaskRequest{Inputs: textIn("go")})
	r := m.call(t, "Big", ev)
	wantFailure(t, r, schemas.CodeStepTooLarge, ev.ID+".fetch.0", fmt.Sprint(bus.MaxStepValue+2), "limit of "+fmt.Sprint(bus.MaxStepValue))
}

// The model calls, agent-to-agent calls and object-store writes a task
// makes are steps of their own: a task whose first delivery fails after
// making one of each makes none of them again on its second, and its
// result is what the first got.
func TestAutomaticStepsAcrossDeliveries(t *testing.T) {
	m := newMesh(t)
	var requests atomic.Int32
	model := llmtest.New(t)
	model.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Answer(fmt.Sprintf("model answer %d", requests.Add(1)))
	})
	client, err := llm.New(model.Config())
	if err != nil {
		t.Fatal(err)
	}
	files := resolvers.NewObjectStore(m.res.Files)
	var calleeRuns atomic.Int32
	m.serve(t, agents.Func(schemas.AgentContract{Name: "Callee", Capability: schemas.CapTransformation, Description: "answers",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		s, _ := ec.Text("text")
		return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{
			"text": schemas.TextValue(fmt.Sprintf("callee run %d on %s", calleeRuns.Add(1), s), "Callee")}}, nil
	}))
	var deliveries atomic.Int32
	m.serve(t, agents.Func(schemas.AgentContract{Name: "Durable", Capability: schemas.CapTransformation, Description: "calls a model, an agent and the file store",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		answer, _, err := client.Complete(ctx, "", "hello")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		called, err := ec.Call(ctx, schemas.AgentNamed("Callee"), schemas.TaskRequest{Inputs: textIn("x")})
		if err != nil {
			return schemas.AgentResult{}, err
		}
		ref, err := files.Store(ctx, strings.NewReader("content"), "text/plain", map[string]string{resolvers.MetaFilename: "out.txt"})
		if err != nil {
			return schemas.AgentResult{}, err
		}
		if deliveries.Add(1) == 1 {
			return schemas.AgentResult{}, agents.Retryable(errors.New("crash after three steps"))
		}
		text, _ := called.Outputs["text"].Text()
		return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{
			"text": schemas.TextValue(answer+" | "+text+" | "+ref.ID, "Durable")}}, nil
	}), agents.WithBackoff(10*time.Millisecond))

	ev := task(t, schemas.TaskRequest{Inputs: textIn("go")})
	r := m.call(t, "Durable", ev)
	if !r.Result.Success {
		t.Fatalf("result %+v", r.Result)
	}
	if deliveries.Load() != 2 {
		t.Fatalf("%d deliveries; want 2", deliveries.Load())
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the model got %d requests over two deliveries; want 1", n)
	}
	if n := calleeRuns.Load(); n != 1 {
		t.Errorf("the callee ran %d times; want once", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ids []string
	for ref, err := range files.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	if len(ids) != 1 {
		t.Fatalf("the file store holds %d files; want the one written once", len(ids))
	}
	got, _ := r.Result.Outputs["text"].Text()
	if want := "model answer 1 | callee run 1 on x | " + ids[0]; got != want {
		t.Errorf("output %q; want %q", got, want)
	}
	kv, err := m.js.KeyValue(ctx, m.n.StepsBucket())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{ev.ID + ".model.0", ev.ID + ".call.0", ev.ID + ".file.0"} {
		if _, err := kv.Get(ctx, k); err != nil {
			t.Errorf("step %s: %v; want it recorded", k, err)
		}
	}
}

// A call made after a step that a redelivery replays keeps the id it had
// the first time: its id comes from its step key, not from how many calls
// this delivery made. Here the first delivery calls Picky with x inside a
// step, then with y, which fails; the second replays the step and calls
// with y again, and must find y's result, not x's.
func TestCallAfterReplayedStepKeepsItsID(t *testing.T) {
	m := newMesh(t)
	var mu sync.Mutex
	runs := map[string]int{}
	m.serve(t, agents.Func(schemas.AgentContract{Name: "Picky", Capability: schemas.CapTransformation, Description: "takes x, refuses y",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		s, _ := ec.Text("text")
		mu.Lock()
		runs[s]++
		mu.Unlock()
		if s == "y" {
			return schemas.Failure("Picky", schemas.CodeInvalidInput, "no y, ever", false), nil
		}
		return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("got "+s, "Picky")}}, nil
	}))
	m.serve(t, agents.Func(schemas.AgentContract{Name: "Nester", Capability: schemas.CapTransformation, Description: "calls in a step, then outside",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		if _, err := ec.Step(ctx, "prepare", func(ctx context.Context, _ string) (any, error) {
			res, err := ec.Call(ctx, schemas.AgentNamed("Picky"), schemas.TaskRequest{Inputs: textIn("x")})
			return res.Outputs, err
		}); err != nil {
			return schemas.AgentResult{}, err
		}
		res, err := ec.Call(ctx, schemas.AgentNamed("Picky"), schemas.TaskRequest{Inputs: textIn("y")})
		if err != nil {
			return schemas.AgentResult{}, agents.Retryable(err)
		}
		return schemas.AgentResult{Success: true, Outputs: res.Outputs}, nil
	}), agents.WithMaxDeliver(2), agents.WithBackoff(10*time.Millisecond))

	r := m.call(t, "Nester", task(t, schemas.TaskRequest{Inputs: textIn("go")}))
	wantFailure(t, r, schemas.CodeExhausted, "no y, ever")
	mu.Lock()
	defer mu.Unlock()
	if runs["x"] != 1 || runs["y"] != 1 {
		t.Errorf("Picky ran %v; want x and y once each (the second delivery finds both by id)", runs)
	}
}
