package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/telemetry/telemetrytest"
)

const tracedModel = "traced-model"

// TestTracesAcrossProcesses runs a chat turn (the llmtest model calling a Go
// agent and the Node.js agent) and a pipeline over the same two agents, with
// the client, the orchestrator and each agent in its own process, all
// exporting OTLP/HTTP to a receiver the test runs, and checks that each
// request is ONE trace whose spans hang parent to child across the
// processes: client → chat turn → model calls and tool calls → agent tasks
// (→ queue wait), and client → pipeline run → steps → agent tasks.
func TestTracesAcrossProcesses(t *testing.T) {
	sink := telemetrytest.NewSink(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_SERVICE_NAME", "")
	srv := bustest.Start(t)
	res := srv.Provision(t)
	bin := agentBinary(t)

	// The Node.js agent, when node is here; else a second Go agent serves
	// its part and the test says why.
	second := "NodeWordCount"
	if node, npm, err := nodetest.Tools(); err != nil {
		t.Logf("the Node.js part is skipped: %v; a Go agent takes its place", err)
		second = "TextAgent"
	} else {
		nodetest.Install(t, npm, filepath.Join("..", "..", "examples", "node"))
		startNodeAgent(t, node, srv.URL())
	}
	startAgentProc(t, srv.URL())

	var replies []llmtest.Reply
	replies = append(replies, llmtest.Calls(llmtest.Call("TextAgent", map[string]any{"text": "hello traced mesh", "op": "upper"})))
	if second == "NodeWordCount" {
		replies = append(replies, llmtest.Calls(llmtest.Call("NodeWordCount", map[string]any{"text": "hello traced mesh"})))
	}
	replies = append(replies, llmtest.Answer("Shouted and counted."))
	model := llmtest.New(t, replies...)
	orchLog := startTracedOrchestrator(t, bin, srv.URL(), model.URL())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, err := client.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	for _, name := range []string{"TextAgent", second} {
		if err := reg.Wait(ctx, name, 1); err != nil {
			t.Fatalf("agent %s never registered: %v", name, err)
		}
	}

	t.Run("chat", func(t *testing.T) {
		chat := exec.Command(bin, "--nats", srv.URL(), "chat", "shout hello traced mesh, then count its words")
		if out, errOut, code := runBinary(t, chat); code != 0 {
			t.Fatalf("chat: exit %d\n%s\n%s", code, out, errOut)
		}
		tools := []string{"TextAgent"}
		if second == "NodeWordCount" {
			tools = append(tools, second)
		}
		spans := sink.Wait(t, 20*time.Second, func(spans []telemetrytest.Span) error { return checkChatTrace(spans, tools, len(replies)) })
		root, _ := traceView(spans).one("agentmesh-chat", "chat", "", "")
		waitLogLine(t, orchLog, "chat turn ended", map[string]string{"trace_id": root.TraceID,
			"conversation": root.Attrs["agentmesh.conversation.id"].(string)})
	})

	t.Run("pipeline", func(t *testing.T) {
		file := pipelineFile(t, "traced.yaml", fmt.Sprintf(`name: traced
steps:
  - {id: shout, agent: TextAgent, params: {op: upper}, inputs: {text: "text:hello traced pipeline"}}
  - {id: count, agent: %s, depends_on: [shout], inputs: {text: shout.text}}
`, second))
		run := exec.Command(bin, "--nats", srv.URL(), "run", file, "--run-id", "traced-run")
		if out, errOut, code := runBinary(t, run); code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
		}
		spans := sink.Wait(t, 20*time.Second, func(spans []telemetrytest.Span) error {
			return checkPipelineTrace(spans, "traced-run", map[string]string{"shout": "TextAgent", "count": second})
		})
		root, _ := traceView(spans).one("agentmesh-run", "pipeline submit", "", "")
		waitLogLine(t, orchLog, "pipeline run completed", map[string]string{"trace_id": root.TraceID, "run": "traced-run"})
		waitLogLine(t, orchLog, "pipeline step completed", map[string]string{"trace_id": root.TraceID, "run": "traced-run", "step": "shout"})
	})
}

// checkChatTrace checks the trace of the one chat turn: the client's span
// is its root, and everything about the conversation is in its trace.
func checkChatTrace(spans []telemetrytest.Span, tools []string, llmCalls int) error {
	tr := traceView(spans)
	root, err := tr.one("agentmesh-chat", "chat", "", "")
	if err != nil {
		return err
	}
	conv, _ := root.Attrs["agentmesh.conversation.id"].(string)
	if err := tr.sameTrace(root.TraceID, "agentmesh.conversation.id", conv); err != nil {
		return err
	}
	turn, err := tr.one("agentmesh-orchestrator", "chat turn", root.TraceID, root.SpanID)
	if err != nil {
		return err
	}
	calls := tr.all("agentmesh-orchestrator", "chat "+tracedModel, root.TraceID, turn.SpanID)
	if len(calls) != llmCalls {
		return fmt.Errorf("%d model call spans under the turn, want %d", len(calls), llmCalls)
	}
	for _, c := range calls {
		for k, want := range map[string]any{"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": tracedModel,
			"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(20)} {
			if c.Attrs[k] != want {
				return fmt.Errorf("model call span: %s = %v, want %v", k, c.Attrs[k], want)
			}
		}
	}
	for _, agent := range tools {
		tool, err := tr.one("agentmesh-orchestrator", "execute_tool "+agent, root.TraceID, turn.SpanID)
		if err != nil {
			return err
		}
		if _, err := tr.agentTask(agent, root.TraceID, tool.SpanID); err != nil {
			return err
		}
	}
	return nil
}

// checkPipelineTrace checks the trace of run runID: the client's submit
// span is its root, the run's span its child, each step's span the run's
// child and each step's task the step's child.
func checkPipelineTrace(spans []telemetrytest.Span, runID string, steps map[string]string) error {
	tr := traceView(spans)
	root, err := tr.one("agentmesh-run", "pipeline submit", "", "")
	if err != nil {
		return err
	}
	if err := tr.sameTrace(root.TraceID, "agentmesh.run.id", runID); err != nil {
		return err
	}
	run, err := tr.one("agentmesh-orchestrator", "pipeline run traced", root.TraceID, root.SpanID)
	if err != nil {
		return err
	}
	for step, agent := range steps {
		s, err := tr.one("agentmesh-orchestrator", "pipeline step "+step, root.TraceID, run.SpanID)
		if err != nil {
			return err
		}
		if _, err := tr.agentTask(agent, root.TraceID, s.SpanID); err != nil {
			return err
		}
	}
	return nil
}

type traceView []telemetrytest.Span

// all returns the spans of service named name in trace (any when "") with
// parent parent ("" for a root).
func (tv traceView) all(service, name, trace, parent string) []telemetrytest.Span {
	var out []telemetrytest.Span
	for _, s := range tv {
		if s.Service == service && s.Name == name && (trace == "" || s.TraceID == trace) && s.ParentID == parent {
			out = append(out, s)
		}
	}
	return out
}

func (tv traceView) one(service, name, trace, parent string) (telemetrytest.Span, error) {
	got := tv.all(service, name, trace, parent)
	if len(got) != 1 {
		return telemetrytest.Span{}, fmt.Errorf("%d spans %q of %s with parent %q in trace %q, want 1", len(got), name, service, parent, trace)
	}
	return got[0], nil
}

// agentTask finds the task span of agent under parent: from the Go
// runtime (with its queue wait child) or from the Node.js agent.
func (tv traceView) agentTask(agent, trace, parent string) (telemetrytest.Span, error) {
	service := "agentmesh-agent"
	if agent == "NodeWordCount" {
		service = "agentmesh-node-agent"
	}
	task, err := tv.one(service, "task "+agent, trace, parent)
	if err != nil || service != "agentmesh-agent" {
		return task, err
	}
	_, err = tv.one(service, "queue wait", trace, task.SpanID)
	return task, err
}

// sameTrace checks that every span whose attribute key is value is in
// trace: one request, one trace.
func (tv traceView) sameTrace(trace, key, value string) error {
	if value == "" {
		return fmt.Errorf("the root span has no %s", key)
	}
	for _, s := range tv {
		if s.Attrs[key] == value && s.TraceID != trace {
			return fmt.Errorf("span %q of %s (%s %s) is in trace %s, not the request's %s", s.Name, s.Service, key, value, s.TraceID, trace)
		}
	}
	return nil
}

// startTracedOrchestrator runs an orchestrator process answering chat
// turns with the llmtest model at modelURL, logging JSON from info on, and
// waits until it is ready. It returns the process's stderr.
func startTracedOrchestrator(t *testing.T, bin, natsURL, modelURL string) *proctest.Buffer {
	t.Helper()
	orch := exec.Command(bin, "--nats", natsURL, "orchestrator", "--log-format", "json", "--log-level", "info")
	orch.Env = append(os.Environ(), "OPENAI_BASE_URL="+modelURL, "OPENAI_API_KEY=test", "AGENTMESH_MODEL="+tracedModel)
	return startUntilReady(t, orch, "orchestrator ready")
}

// waitLogLine waits for a JSON log line with message msg and the string
// fields want in log.
func waitLogLine(t *testing.T, log *proctest.Buffer, msg string, want map[string]string) {
	t.Helper()
	found := fixture.Within(10*time.Second, func() bool {
		for line := range strings.SplitSeq(log.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != msg {
				continue
			}
			match := true
			for k, v := range want {
				match = match && rec[k] == v
			}
			if match {
				return true
			}
		}
		return false
	})
	if !found {
		t.Fatalf("no JSON log line %q with %v:\n%s", msg, want, log.String())
	}
}

// startNodeAgent runs examples/node/agent.js and waits until it is ready.
func startNodeAgent(t *testing.T, node, natsURL string) {
	t.Helper()
	cmd := exec.Command(node, "agent.js")
	cmd.Dir = filepath.Join("..", "..", "examples", "node")
	cmd.Env = append(os.Environ(), "NATS_URL="+natsURL, "AGENT_HEARTBEAT_MS=1000")
	startUntilReady(t, cmd, "ready")
}

// startUntilReady starts cmd and waits for a line of its stdout containing
// word; the process is killed when the test ends. It returns cmd's stderr.
func startUntilReady(t *testing.T, cmd *exec.Cmd, word string) *proctest.Buffer {
	t.Helper()
	p := proctest.Start(t, cmd, regexp.MustCompile(regexp.QuoteMeta(word)))
	p.WaitReady(t)
	return p.Stderr
}
