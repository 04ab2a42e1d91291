package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// durableIterations is the tool loop's length in the durability test: the
// model asks for write_file this many times, then answers.
const durableIterations = 5

// fileTool is an MCP server (streamable HTTP, in the test process) with
// one tool, write_file, that writes a file into dir and counts the writes
// of each name. With hold set to i, its i-th call (by file number) blocks
// the first time, without writing, until release is closed: the test
// kills the agent process then, in the middle of iteration i.
type fileTool struct {
	dir     string
	mu      sync.Mutex
	writes  map[string]int
	hold    int
	holding chan struct{} // closed when the held call came
	release chan struct{}
	held    bool
}

type writeArgs struct {
	N    int    `json:"n" jsonschema:"the file's number"`
	Text string `json:"text" jsonschema:"what to write"`
}

func startFileTool(t *testing.T, hold int) (*fileTool, string) {
	t.Helper()
	ft := &fileTool{dir: t.TempDir(), writes: map[string]int{}, hold: hold, holding: make(chan struct{}), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "writes file n with text"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in writeArgs) (*mcp.CallToolResult, any, error) {
			name := fmt.Sprintf("f%d.txt", in.N)
			ft.mu.Lock()
			hold := in.N == ft.hold && !ft.held
			if hold {
				ft.held = true
				close(ft.holding)
			}
			ft.mu.Unlock()
			if hold {
				<-ft.release // the agent that called is dead by now
				return nil, nil, fmt.Errorf("the caller went away")
			}
			if err := os.WriteFile(filepath.Join(ft.dir, name), []byte(in.Text), 0o644); err != nil {
				return nil, nil, err
			}
			ft.mu.Lock()
			ft.writes[name]++
			ft.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("wrote %s (%d bytes)", name, len(in.Text))}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		ft.mu.Lock()
		if !ft.held {
			close(ft.holding)
		}
		ft.held = true
		ft.mu.Unlock()
		select {
		case <-ft.release:
		default:
			close(ft.release)
		}
		hs.Close()
	})
	return ft, hs.URL
}

// durableModel answers from the conversation it is shown: a write_file
// call for the next file while fewer than durableIterations tool results
// are in it, then an answer quoting them. It counts its requests.
func durableModel(t *testing.T, requests *atomic.Int32) *llmtest.Server {
	model := llmtest.New(t)
	model.Handle(func(r llmtest.Request) llmtest.Reply {
		requests.Add(1)
		results := r.MessagesOf("tool")
		if len(results) < durableIterations {
			n := len(results) + 1
			return llmtest.Calls(llmtest.Call("write_file", map[string]any{"n": n, "text": fmt.Sprintf("content of file %d", n)}))
		}
		var said []string
		for _, m := range results {
			said = append(said, m.Content)
		}
		return llmtest.Answer("done: " + strings.Join(said, "; "))
	})
	return model
}

// durableRun is one task of a PromptAgent with a 5-iteration tool loop,
// in agent processes: the first is SIGKILLed in the middle of iteration
// kill (0: none) and a second one started, which finishes the task.
type durableRun struct {
	output         string
	modelRequests  int
	writes         map[string]int
	agentProcesses int
}

func runDurable(t *testing.T, srv *bustest.Server, nc *nats.Conn, kill int) durableRun {
	t.Helper()
	var requests atomic.Int32
	model := durableModel(t, &requests)
	tool, toolURL := startFileTool(t, kill)
	name := fmt.Sprintf("Writer%d", kill)
	cfg := filepath.Join(t.TempDir(), "writer.yaml")
	yaml := fmt.Sprintf(`name: %s
description: Writes five files with a tool, then says what it wrote.
capability: GENERATION
system_prompt: Write the files with write_file, then say what you wrote.
inputs: [{name: text, data_type: TEXT, required: true}]
outputs: [{name: answer, data_type: TEXT}]
max_tool_steps: 10
mcp: [{url: %q}]
`, name, toolURL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var procs []*proctest.Proc
	defer func() { // each run's agent processes end with it
		for _, p := range procs {
			_ = p.Cmd.Process.Signal(syscall.SIGKILL)
			<-p.Exited()
		}
	}()
	start := func() *proctest.Proc {
		cmd := exec.Command(agentBinary(t), "agent", "--config", cfg, "--nats", srv.URL(),
			"--heartbeat", agentTestHeartbeat.String(), "--ack-wait", "2s")
		cmd.Env = append(cleanEnv(), "OPENAI_BASE_URL="+model.URL(), "OPENAI_API_KEY=test", "AGENTMESH_MODEL=test-model")
		p := proctest.Start(t, cmd, regexp.MustCompile(`^agent \S+ instance (\S+) ready`))
		p.WaitReady(t)
		procs = append(procs, p)
		return p
	}
	first := start()
	ev, err := bus.NewEvent(bus.TypeTaskRequested, "/test", schemas.TaskRequest{
		Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("write the files", "test")}})
	if err != nil {
		t.Fatal(err)
	}
	ev.DataContentType = bus.ContentTypeJSON
	sub, err := nc.SubscribeSync("mesh.result." + name + "." + ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	msg, err := bus.Encode("mesh.task."+name, ev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := srv.JetStream(t).PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	run := durableRun{agentProcesses: 1}
	if kill > 0 {
		select {
		case <-tool.holding:
		case <-ctx.Done():
			t.Fatalf("iteration %d's tool call never came", kill)
		}
		if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-first.Exited()
		close(tool.release)
		start()
		run.agentProcesses++
	}
	m, err := sub.NextMsg(60 * time.Second)
	if err != nil {
		t.Fatalf("kill at iteration %d: no result: %v", kill, err)
	}
	rev, err := bus.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	var res schemas.AgentResult
	if err := json.Unmarshal(rev.Data, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Success {
		t.Fatalf("kill at iteration %d: the task failed: %+v", kill, res.Error)
	}
	if kill > 0 && res.Metrics.Attempt < 2 {
		t.Errorf("kill at iteration %d: answered on delivery %d; want a redelivery", kill, res.Metrics.Attempt)
	}
	run.output, _ = res.Outputs["answer"].Text()
	run.modelRequests = int(requests.Load())
	tool.mu.Lock()
	run.writes = tool.writes
	tool.mu.Unlock()
	return run
}

// TestPromptAgentSurvivesSIGKILLMidToolLoop is the durability acceptance
// test: a PromptAgent process with a 5-iteration tool loop (a scripted
// model server counting requests, an MCP tool writing files) is
// SIGKILLed in the middle of each iteration in turn and another process
// started; each time the task completes with as many model requests as a
// run with no kill, each file written once, and the same answer.
func TestPromptAgentSurvivesSIGKILLMidToolLoop(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	nc := srv.Conn(t)

	base := runDurable(t, srv, nc, 0)
	if base.modelRequests != durableIterations+1 {
		t.Fatalf("a run with no kill made %d model requests; want %d (one per iteration and the answer)", base.modelRequests, durableIterations+1)
	}
	if len(base.writes) != durableIterations {
		t.Fatalf("a run with no kill wrote %v", base.writes)
	}
	for k := 1; k <= durableIterations; k++ {
		run := runDurable(t, srv, nc, k)
		t.Logf("killed in iteration %d: %d model requests, writes %v, %d processes", k, run.modelRequests, run.writes, run.agentProcesses)
		if run.modelRequests != base.modelRequests {
			t.Errorf("killed in iteration %d: %d model requests; want %d, as with no kill", k, run.modelRequests, base.modelRequests)
		}
		for i := 1; i <= durableIterations; i++ {
			if n := run.writes[fmt.Sprintf("f%d.txt", i)]; n != 1 {
				t.Errorf("killed in iteration %d: f%d.txt written %d times; want once", k, i, n)
			}
		}
		if run.output != base.output {
			t.Errorf("killed in iteration %d: answer %q; want the one with no kill, %q", k, run.output, base.output)
		}
	}
}
