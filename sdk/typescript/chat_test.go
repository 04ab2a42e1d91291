package typescript_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestTypeScriptChatDeltas: a TypeScript client takes two chat turns of
// one conversation with MeshClient.chat and onDelta, against an
// orchestrator whose model is the scripted llmtest server streaming its
// text in pieces: each turn's pieces reach the client, in order and before
// the turn's answer, as the orchestrator sends them on
// mesh.delta.<conversation> (each a schemas.ChatDelta that passes
// chat-delta.schema.json), and the second turn's answer is the second
// turn's, not the first one's.
func TestTypeScriptChatDeltas(t *testing.T) {
	node, npm, err := nodetest.Tools()
	if err != nil {
		t.Skipf("skipping the TypeScript SDK: %v", err)
	}
	nodetest.Install(t, npm, ".")
	nodetest.Build(t, npm, ".")

	m := meshtest.New(t)
	srv := m.Srv
	first := []string{"Hello", " from the", " scripted model."}
	second := []string{"And", " again."}
	model := llmtest.New(t,
		llmtest.Reply{Content: strings.Join(first, ""), Chunks: first},
		llmtest.Reply{Content: strings.Join(second, ""), Chunks: second})
	lc, err := llm.New(model.Config())
	if err != nil {
		t.Fatal(err)
	}
	m.Orchestrator(t, nil, orchestrator.WithChat(chat.WithLLM(lc), chat.WithLogger(slog.New(slog.DiscardHandler))))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", deltaScript)
	cmd.Env = append(os.Environ(), "NATS_URL="+srv.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the TypeScript chat client: %v\n%s", err, out)
	}
	type line struct {
		Kind   string          `json:"kind"`
		Delta  json.RawMessage `json:"delta"`
		Answer *schemas.ChatResponse
	}
	var turns [][]schemas.ChatDelta
	var answers []schemas.ChatResponse
	var pieces []schemas.ChatDelta
	for l := range strings.Lines(string(out)) {
		var got line
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("the client printed %q: %v\n%s", l, err, out)
		}
		switch got.Kind {
		case "delta":
			if err := schemas.ValidateJSON("chat-delta", got.Delta); err != nil {
				t.Errorf("piece %s fails chat-delta.schema.json: %v", got.Delta, err)
			}
			var d schemas.ChatDelta
			if err := json.Unmarshal(got.Delta, &d); err != nil {
				t.Fatal(err)
			}
			pieces = append(pieces, d)
		case "answer":
			turns, answers = append(turns, pieces), append(answers, *got.Answer)
			pieces = nil
		}
	}
	if len(answers) != 2 || len(pieces) != 0 {
		t.Fatalf("%d answers (pieces after the last: %d), want 2:\n%s", len(answers), len(pieces), out)
	}
	for i, want := range [][]string{first, second} {
		a, ds := answers[i], turns[i]
		if a.State != schemas.ChatCompleted || a.Output != strings.Join(want, "") {
			t.Errorf("turn %d: answer %+v, want %q", i+1, a, strings.Join(want, ""))
		}
		if len(ds) != len(want) {
			t.Fatalf("turn %d: %d pieces before the answer, want %d: %+v", i+1, len(ds), len(want), ds)
		}
		for j, d := range ds {
			if d.Text != want[j] || d.Seq != j+1 || d.ConversationID != a.ConversationID || d.Step != ds[0].Step || d.Turn != ds[0].Turn {
				t.Errorf("turn %d piece %d: %+v, want %q, seq %d, conversation %s", i+1, j+1, d, want[j], j+1, a.ConversationID)
			}
		}
	}
	if answers[0].ConversationID != answers[1].ConversationID || turns[1][0].Turn <= turns[0][0].Turn {
		t.Errorf("the turns are not two turns of one conversation: %+v then %+v", turns[0][0], turns[1][0])
	}
}

// deltaScript takes two chat turns of one conversation, printing each
// piece of text as it comes and each answer, one JSON line each.
const deltaScript = `import { connect } from "@nats-io/transport-node";
import { MeshClient } from "./dist/src/index.js";

const nc = await connect({ servers: process.env.NATS_URL });
const mesh = new MeshClient(nc);
const onDelta = (delta) => console.log(JSON.stringify({ kind: "delta", delta }));
const a = await mesh.chat("say hello", { onDelta, waitMs: 30000 });
console.log(JSON.stringify({ kind: "answer", answer: a }));
const b = await mesh.chat("say it again", { conversationId: a.conversation_id, onDelta, waitMs: 30000 });
console.log(JSON.stringify({ kind: "answer", answer: b }));
await nc.drain();
`
