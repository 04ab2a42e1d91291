package chat_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// The seed chat runs end to end with each provider's scripted server, and
// while the chat loop's model writes its answer, the text reaches a
// reader of the conversation's delta subject piece by piece: the scripted
// model holds the rest of its answer until the test has read the first
// piece. The answer and the state are those of a turn without streaming.
func TestChatStreamsTheModelsTextAsItIsWritten(t *testing.T) {
	t.Parallel()
	const answer = "I found 12 sunset images and organized them into 2 folders."
	chunks := []string{"I found 12 sunset images", " and organized them", " into 2 folders."}
	for _, p := range []struct {
		name  string
		model func(t *testing.T, replies ...llmtest.Reply) llm.Model
	}{
		{"openai", func(t *testing.T, replies ...llmtest.Reply) llm.Model { return newLLM(t, llmtest.New(t, replies...)) }},
		{"anthropic", func(t *testing.T, replies ...llmtest.Reply) llm.Model {
			c, err := llm.New(llmtest.NewAnthropic(t, replies...).Config())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"gemini", func(t *testing.T, replies ...llmtest.Reply) llm.Model {
			c, err := llm.New(llmtest.NewGemini(t, replies...).Config())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
	} {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			m := meshtest.New(t)
			seedAgents(t, m, nil)
			gate := make(chan struct{})
			model := p.model(t,
				llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"})),
				llmtest.Calls(llmtest.Call("ImageAnalysis", map[string]any{})),
				llmtest.Calls(llmtest.Call("FolderOrganizer", map[string]any{"categories": "†state.current_categorization"})),
				llmtest.Reply{Content: answer, Chunks: chunks, Gate: gate},
			)
			open := sync.OnceFunc(func() { close(gate) })
			t.Cleanup(open) // before the scripted server stops, whatever failed
			chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"}, chat.WithLLM(model))

			conv := fmt.Sprintf("c%d", time.Now().UnixNano())
			nc := m.Srv.Conn(t)
			deltas := make(chan schemas.ChatDelta, 16)
			stop, err := meshcore.FollowDeltas(nc, m.Srv.Names(), conv, func(d schemas.ChatDelta) { deltas <- d })
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			ce := followChat(t, m, conv)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, _, err := client.SendChat(ctx, m.Srv.JetStream(t), m.Srv.Names(), conv, "Find sunset images and organize them into folders", "test"); err != nil {
				t.Fatal(err)
			}
			var first schemas.ChatDelta
			select {
			case first = <-deltas:
			case <-ctx.Done():
				t.Fatal("no delta while the model was writing")
			}
			if first != (schemas.ChatDelta{ConversationID: conv, Turn: 1, Step: 4, Seq: 1, Text: chunks[0]}) {
				t.Fatalf("first delta = %+v", first)
			}
			select {
			case r := <-ce.final:
				t.Fatalf("the turn answered before the model finished writing: %+v", r)
			default:
			}
			open()
			resp := ce.wait(t, 30*time.Second)
			if resp.State != schemas.ChatCompleted || resp.Output != answer || resp.Steps != 4 {
				t.Fatalf("response = %+v", resp)
			}
			text := first.Text
			for seq := 2; seq <= len(chunks); seq++ {
				d := <-deltas
				if d.Seq != seq || d.Step != 4 {
					t.Fatalf("delta %d = %+v", seq, d)
				}
				text += d.Text
			}
			if text != answer {
				t.Fatalf("deltas put together = %q, want the answer %q", text, answer)
			}
			// Never stored: no stream holds the delta subject.
			if name, err := m.Srv.JetStream(t).StreamNameBySubject(ctx, m.Srv.Names().Deltas(conv)); !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Fatalf("stream %q holds %s (err %v); deltas must not be stored", name, m.Srv.Names().Deltas(conv), err)
			}
			if st := conversation(t, m, conv); st.Turns != 1 || !strings.Contains(resp.Output, "12 sunset images") {
				t.Fatalf("state after the streamed turn: %+v", st)
			}
		})
	}
}
