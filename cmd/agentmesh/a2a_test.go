package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// a2aJSDir holds the A2A JavaScript SDK's client and test server.
var a2aJSDir = filepath.Join("..", "..", "bridge", "a2a", "testdata", "js")

// startLineProc starts cmd and returns the first group of its first stdout
// line matching re; the process is killed when the test ends.
func startLineProc(t *testing.T, cmd *exec.Cmd, re *regexp.Regexp) string {
	t.Helper()
	return proctest.Start(t, cmd, re).WaitReady(t)[1]
}

// TestA2ABridgeWithTheJavaScriptSDK runs 'agentmesh a2a' and 'agentmesh
// agent --a2a' as processes between an embedded mesh and the official A2A
// JavaScript SDK: the SDK's client completes TextAgent tasks through the
// bridge (SendMessage, SendStreamingMessage, GetTask), and an A2A server
// built with the SDK is a step of a pipeline.
func TestA2ABridgeWithTheJavaScriptSDK(t *testing.T) {
	node, npm, err := nodetest.Tools()
	if err != nil {
		t.Skip(err)
	}
	nodetest.Install(t, npm, a2aJSDir)
	url := chatMesh(t)
	bin := agentBinary(t)

	bridge := proctest.Start(t, exec.Command(bin, "a2a", "--http", "127.0.0.1:0", "--nats", url),
		regexp.MustCompile(`serving A2A 1\.0 on (http://\S+)`))
	base := bridge.WaitReady(t)[1]
	waitHTTP(t, base+"/a2a/agents/TextAgent/.well-known/agent-card.json", bridge.Stderr)

	steps := runSDKClient(t, node, base+"/a2a/agents/TextAgent/", "hello mesh", upperMeta)
	if steps["version"]["version"] != "1.0" {
		t.Errorf("the client spoke %v", steps["version"])
	}
	if c := steps["card"]; c["name"] != "TextAgent" || c["url"] != base+"/a2a/agents/TextAgent" || c["streaming"] != true {
		t.Errorf("card as the SDK read it: %v", c)
	}
	wantUpperTask(t, "1.0", steps, true)

	// The same through the SDK's A2A 0.3 compatibility layer.
	steps = runSDKClient(t, node, base+"/a2a/agents/TextAgent/", "hello mesh", upperMeta, "A2A_LEGACY=1")
	if steps["version"]["version"] != "0.3" {
		t.Errorf("the legacy client spoke %v", steps["version"])
	}
	wantUpperTask(t, "0.3", steps, true)

	// The chat: the orchestrator's card at the root, a turn per message.
	chat := runSDKClient(t, node, base, "say hello", "")
	if c := chat["card"]; c["name"] != "agentmesh" || c["url"] != base+"/a2a/chat" {
		t.Errorf("chat card: %v", c)
	}
	if s := chat["send"]; s["state"] != "TASK_STATE_COMPLETED" || s["status"] != "Hello from the mesh." {
		t.Errorf("chat turn: %v", s)
	}
	// The turn's first progress ("thinking") may come before the stream
	// starts (the task is then WORKING at once) or after (a status update);
	// the model's text comes as chunks of the answer artifact as it is
	// written, then the whole answer, then the end.
	kinds, _ := json.Marshal(chat["stream"]["kinds"])
	if !chatStreamOK(chat["stream"]["kinds"], "Hello from the mesh.") {
		t.Errorf("chat stream as the SDK saw it: %s", kinds)
	}

	// The same bridge mounted in the gateway, beside the HTTP API.
	gw := startLineProc(t, exec.Command(bin, "gateway", "--http", "127.0.0.1:0", "--nats", url),
		regexp.MustCompile(`dashboard and API on (http://[0-9.:]+)/`))
	steps = runSDKClient(t, node, gw+"/a2a/agents/TextAgent/", "hello mesh", upperMeta)
	if c := steps["card"]; c["name"] != "TextAgent" || c["url"] != gw+"/a2a/agents/TextAgent" {
		t.Errorf("card through the gateway: %v", c)
	}
	wantUpperTask(t, "through the gateway", steps, false)

	remotePipelineStep(t, node, bin, url)
}

// remotePipelineStep runs an A2A server built with the SDK, announces it
// with 'agentmesh agent --a2a', and runs a pipeline with it as a step.
func remotePipelineStep(t *testing.T, node, bin, url string) {
	t.Helper()
	remote := startLineProc(t, exec.Command(node, filepath.Join(a2aJSDir, "server.mjs"), "0"), regexp.MustCompile(`"url":"([^"]+)"`))
	startLineProc(t, exec.Command(bin, "agent", "--a2a", remote, "--nats", url, "--heartbeat", agentTestHeartbeat.String()),
		regexp.MustCompile(`^agent (WordReverser) instance \S+ ready`))
	// The same server speaking A2A 0.3 only, under another name.
	old := startLineProc(t, exec.Command(node, filepath.Join(a2aJSDir, "server.mjs"), "0", "legacy"), regexp.MustCompile(`"url":"([^"]+)"`))
	startLineProc(t, exec.Command(bin, "agent", "--a2a", old, "--a2a-name", "OldReverser", "--nats", url, "--heartbeat", agentTestHeartbeat.String()),
		regexp.MustCompile(`^agent (OldReverser) instance \S+ ready`))
	file := pipelineFile(t, "remote.yaml", `name: remote
steps:
  - {id: lower, agent: TextAgent, params: {op: lower}, inputs: {text: "text:One Two Three"}}
  - {id: reverse, agent: WordReverser, depends_on: [lower]}
  - {id: back, agent: OldReverser, depends_on: [reverse]}
`)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--nats", url, "--json", "run", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, &stdout, &stderr)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var ev struct {
			Type  string            `json:"type"`
			Data  schemas.StepEvent `json:"data"`
			Views []valueView       `json:"views"`
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == "io.agentmesh.pipeline.step.completed" && len(ev.Views) == 1 {
			got[ev.Data.Step] = ev.Views[0].Text
		}
	}
	if got["reverse"] != "THREE TWO ONE" || got["back"] != "ONE TWO THREE" {
		t.Fatalf("the remote steps answered %q\n%s", got, &stdout)
	}
}

// chatMesh starts an embedded server with TextAgent and an orchestrator
// whose chat asks a scripted LLM, which answers "Hello from the mesh." to
// everything; it returns the server's URL.
func chatMesh(t *testing.T) string {
	t.Helper()
	mesh := meshtest.New(t)
	srv := mesh.Srv
	ls := llmtest.New(t)
	ls.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Answer("Hello from the mesh.") })
	lc, err := llm.New(ls.Config())
	if err != nil {
		t.Fatal(err)
	}
	textMesh{
		agentOpts: []agents.Option{agents.WithHeartbeat(time.Second)},
		orchOpts:  []orchestrator.Option{orchestrator.WithChat(chat.WithLLM(lc))},
	}.start(t, mesh)
	return srv.URL()
}

// upperMeta is the message metadata that asks TextAgent to upper-case.
const upperMeta = `{"params":{"op":"upper"}}`

// runSDKClient runs the SDK's client.mjs on the agent at url with message
// (and the message metadata meta unless ""), env added to the test's, and
// returns its JSON lines by step.
func runSDKClient(t *testing.T, node, url, message, meta string, env ...string) map[string]map[string]any {
	t.Helper()
	args := []string{filepath.Join(a2aJSDir, "client.mjs"), url, message}
	if meta != "" {
		args = append(args, meta)
	}
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the SDK client failed on %s %v: %v\n%s", url, env, err, out)
	}
	steps := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("client line %q: %v", l, err)
		}
		steps[m["step"].(string)] = m
	}
	return steps
}

// wantUpperTask checks the client's send and get (and, if stream, its
// stream) of "hello mesh" to TextAgent: completed with HELLO MESH.
func wantUpperTask(t *testing.T, what string, steps map[string]map[string]any, stream bool) {
	t.Helper()
	for _, step := range []string{"send", "get"} {
		s := steps[step]
		arts, _ := s["artifacts"].([]any)
		if s["state"] != "TASK_STATE_COMPLETED" || len(arts) != 1 || arts[0].(map[string]any)["text"] != "HELLO MESH" {
			t.Errorf("%s: %s: %v", what, step, s)
		}
	}
	if !stream {
		return
	}
	if kinds, _ := json.Marshal(steps["stream"]["kinds"]); string(kinds) != `["task:TASK_STATE_SUBMITTED","artifact:HELLO MESH","status:TASK_STATE_COMPLETED"]` {
		t.Errorf("%s: stream events as the SDK saw them: %s", what, kinds)
	}
}

// chatStreamOK reports whether the kinds of a chat turn's A2A stream are
// the task (submitted then working, or working at once), chunks of the
// answer artifact that together spell answer (with working statuses of
// the turn's progress among them), the whole answer, and the completed
// status.
func chatStreamOK(v any, answer string) bool {
	raw, _ := v.([]any)
	var kinds []string
	for _, k := range raw {
		s, _ := k.(string)
		kinds = append(kinds, s)
	}
	switch {
	case len(kinds) >= 2 && kinds[0] == "task:TASK_STATE_SUBMITTED" && kinds[1] == "status:TASK_STATE_WORKING":
		kinds = kinds[2:]
	case len(kinds) >= 1 && kinds[0] == "task:TASK_STATE_WORKING":
		kinds = kinds[1:]
	default:
		return false
	}
	if len(kinds) < 2 || kinds[len(kinds)-1] != "status:TASK_STATE_COMPLETED" || kinds[len(kinds)-2] != "artifact:"+answer {
		return false
	}
	spelled := ""
	for _, k := range kinds[:len(kinds)-2] {
		if k == "status:TASK_STATE_WORKING" {
			continue // the turn's progress travels apart from its text
		}
		chunk, ok := strings.CutPrefix(k, "artifact:")
		if !ok {
			return false
		}
		spelled += chunk
	}
	return spelled == "" || spelled == answer
}
