package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
)

// syncBuffer is a buffer written by a process's pipe and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `agentmesh chat` writes the model's text as it is written: the
// orchestrator process talks to a scripted Anthropic server that holds the
// rest of its answer until the test has seen the first piece on the chat
// command's stderr, while the command still waits for the answer.
func TestChatCommandPrintsTheModelsTextAsItArrives(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	chatSeedAgents(t, srv)
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	model := llmtest.NewAnthropic(t,
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"})),
		llmtest.Calls(llmtest.Call("ImageAnalysis", map[string]any{"images": "†state.current_image_ids"})),
		llmtest.Calls(llmtest.Call("FolderOrganizer", map[string]any{"categories": "†state.current_categorization"})),
		llmtest.Reply{Content: "I found 2 sunset images and put them in 1 folder.", Chunks: []string{"I found 2 sunset images", " and put them in 1 folder."}, Gate: gate},
	)
	t.Cleanup(open) // before the scripted server stops, whatever failed
	bin := agentBinary(t)
	env := append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=",
		"AGENTMESH_MODEL=anthropic:claude-test", "ANTHROPIC_BASE_URL="+model.URL(), "ANTHROPIC_API_KEY=test-key")

	orch := exec.Command(bin, "--nats", srv.URL(), "orchestrator")
	orch.Env = env
	var orchErr syncBuffer
	orch.Stderr = &orchErr
	if err := orch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orch.Process.Kill(); _ = orch.Wait() })

	chat := exec.Command(bin, "--nats", srv.URL(), "chat", "--timeout", "60s", "Find sunset images and organize them into folders")
	chat.Env = env
	var out, errOut syncBuffer
	chat.Stdout, chat.Stderr = &out, &errOut
	if err := chat.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- chat.Wait() }()
	t.Cleanup(func() { _ = chat.Process.Kill() })

	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(errOut.String(), "  > I found 2 sunset images") {
		select {
		case err := <-exited:
			t.Fatalf("chat exited (%v) before printing the first piece\nstdout: %s\nstderr: %s\norchestrator: %s", err, out.String(), errOut.String(), orchErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no streamed text on stderr:\n%s\norchestrator: %s", errOut.String(), orchErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(out.String(), "I found 2") {
		t.Fatalf("the answer was printed before the model finished writing it:\n%s", out.String())
	}
	open()
	if err := <-exited; err != nil {
		t.Fatalf("chat: %v\nstdout: %s\nstderr: %s\norchestrator: %s", err, out.String(), errOut.String(), orchErr.String())
	}
	if !strings.Contains(errOut.String(), "  > I found 2 sunset images and put them in 1 folder.\n") {
		t.Errorf("stderr lacks the whole streamed line:\n%s", errOut.String())
	}
	if n := strings.Count(out.String(), "I found 2 sunset images and put them in 1 folder."); n != 1 {
		t.Errorf("stdout has the answer %d times, want once:\n%s", n, out.String())
	}
}
