package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// chatIterations is the chat turn's tool loop in the durability test: the
// model calls Worker this many times, one after the other, then answers.
const chatIterations = 3

// chatWorker is an in-process agent that counts its executions by task
// id; with hold set to i, its execution for n=i blocks the first time
// until release is closed: the test kills the orchestrator replica then.
type chatWorker struct {
	mu      sync.Mutex
	runs    map[string]int // by step n
	hold    int
	held    bool
	holding chan struct{}
	release chan struct{}
}

func (w *chatWorker) agent(name string) agents.Agent {
	return agents.Func(schemas.AgentContract{Name: name, Capability: schemas.CapTransformation, Description: "Does step n of a job.",
		Params:  json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			n := ec.Param("n")
			w.mu.Lock()
			hold := n == fmt.Sprint(w.hold) && !w.held
			if hold {
				w.held = true
				close(w.holding)
			}
			w.mu.Unlock()
			if hold {
				<-w.release
			}
			w.mu.Lock()
			w.runs["n="+n]++
			w.mu.Unlock()
			return schemas.AgentResult{Success: true, Summary: "did step " + n,
				Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("step "+n+" done", name)}}, nil
		})
}

// chatRun is one chat turn whose orchestrator replica is SIGKILLed while
// the agent works on iteration kill (0: none) and another started.
type chatRun struct {
	output        string
	modelRequests int
	tasks         map[string]int
}

func runChatDurable(t *testing.T, srv *bustest.Server, kill int) chatRun {
	t.Helper()
	name := fmt.Sprintf("Worker%d", kill)
	w := &chatWorker{runs: map[string]int{}, hold: kill, holding: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		select {
		case <-w.release:
		default:
			close(w.release)
		}
	})
	meshtest.Serve(t, srv.Conn(t), w.agent(name), agents.WithHeartbeat(time.Second))

	var requests atomic.Int32
	model := llmtest.New(t)
	model.Handle(func(r llmtest.Request) llmtest.Reply {
		requests.Add(1)
		if done := len(r.MessagesOf("tool")); done < chatIterations {
			return llmtest.Calls(llmtest.Call(name, map[string]any{"n": done + 1}))
		}
		return llmtest.Answer(fmt.Sprintf("all %d steps done", chatIterations))
	})
	var replicas []*proctest.Proc
	defer func() { // the next run's turns are for its own replicas
		for _, p := range replicas {
			_ = p.Cmd.Process.Signal(syscall.SIGKILL)
			<-p.Exited()
		}
	}()
	start := func() *proctest.Proc {
		cmd := exec.Command(agentBinary(t), "orchestrator", "--nats", srv.URL(), "--ack-wait", "2s")
		cmd.Env = append(cleanEnv(), "OPENAI_BASE_URL="+model.URL(), "OPENAI_API_KEY=test", "AGENTMESH_MODEL=test-model")
		p := proctest.Start(t, cmd, regexp.MustCompile(`ready`))
		p.WaitReady(t)
		replicas = append(replicas, p)
		return p
	}
	first := start()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type answer struct {
		resp schemas.ChatResponse
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		// The orchestrator learns of the agent from the registry; a turn
		// sent before may find it unknown, as the model asked for it.
		resp, _, err := client.Turn(ctx, srv.JetStream(t), srv.Names(), "", "do the job with "+name, "test", nil, nil)
		answered <- answer{resp, err}
	}()
	if kill > 0 {
		select {
		case <-w.holding:
		case a := <-answered:
			t.Fatalf("kill in iteration %d: the turn ended first: %+v %v", kill, a.resp, a.err)
		case <-ctx.Done():
			t.Fatalf("iteration %d's task never came", kill)
		}
		if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-first.Exited()
		start()
		close(w.release)
	}
	a := <-answered
	if a.err != nil {
		t.Fatalf("kill in iteration %d: %v", kill, a.err)
	}
	if a.resp.State != schemas.ChatCompleted {
		t.Fatalf("kill in iteration %d: the turn ended %s: %s", kill, a.resp.State, a.resp.Output)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return chatRun{output: a.resp.Output, modelRequests: int(requests.Load()), tasks: w.runs}
}

// TestChatTurnSurvivesSIGKILLMidToolLoop: an orchestrator replica process
// is SIGKILLed in the middle of each iteration of a chat turn's tool loop
// in turn, while the agent works; another replica finishes the turn with
// as many model requests as a turn with no kill, each tool task run once
// and the same answer. The turn's record (mesh_conversations) is its
// journal: saved after each model call and each round of tool calls, with
// tool task ids derived from the turn (docs/durability.md).
func TestChatTurnSurvivesSIGKILLMidToolLoop(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	base := runChatDurable(t, srv, 0)
	if base.modelRequests != chatIterations+1 || len(base.tasks) != chatIterations {
		t.Fatalf("a turn with no kill: %d model requests, tasks %v; want %d and %d", base.modelRequests, base.tasks, chatIterations+1, chatIterations)
	}
	for k := 1; k <= chatIterations; k++ {
		run := runChatDurable(t, srv, k)
		t.Logf("killed in iteration %d: %d model requests, tasks run %v", k, run.modelRequests, run.tasks)
		if run.modelRequests != base.modelRequests {
			t.Errorf("killed in iteration %d: %d model requests; want %d, as with no kill", k, run.modelRequests, base.modelRequests)
		}
		if len(run.tasks) != chatIterations {
			t.Errorf("killed in iteration %d: %d tool tasks; want %d", k, len(run.tasks), chatIterations)
		}
		for step, n := range run.tasks {
			if n != 1 {
				t.Errorf("killed in iteration %d: the task of %s ran %d times; want once", k, step, n)
			}
		}
		if run.output != base.output {
			t.Errorf("killed in iteration %d: answer %q; want %q", k, run.output, base.output)
		}
	}
}
