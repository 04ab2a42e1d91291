package node_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
)

// TestNodeClientStreamsText: with a model that streams (the scripted
// llmtest server behind the orchestrator), client.js writes the model's
// text as it comes, on a line of its own before the answer.
func TestNodeClientStreamsText(t *testing.T) {
	node := nodeTools(t)
	m := meshtest.New(t)
	srv := m.Srv
	pieces := []string{"Counting", " is done:", " six words."}
	model := llmtest.New(t, llmtest.Reply{Content: strings.Join(pieces, ""), Chunks: pieces})
	lc, err := llm.New(model.Config())
	if err != nil {
		t.Fatal(err)
	}
	m.Orchestrator(t, nil, orchestrator.WithChat(chat.WithLLM(lc), chat.WithLogger(slog.New(slog.DiscardHandler))))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.js", "--timeout", "40", "count the words of this sentence")
	cmd.Env = append(os.Environ(), "NATS_URL="+srv.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client.js: %v\n%s", err, out)
	}
	text := "> " + strings.Join(pieces, "") + "\n"
	i, j := strings.Index(string(out), text), strings.Index(string(out), "state: completed")
	if i < 0 || (i > 0 && out[i-1] != '\n') || j < 0 || i > j {
		t.Fatalf("client.js did not write the model's text %q as it came, before the answer:\n%s", text, out)
	}
}
