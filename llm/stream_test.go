package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// scripted is one provider's scripted server, for tests that run against
// each.
type scripted struct {
	name  string
	start func(t *testing.T, replies ...llmtest.Reply) (llm.Config, func() int)
}

func providers() []scripted {
	return []scripted{
		{name: "openai", start: func(t *testing.T, replies ...llmtest.Reply) (llm.Config, func() int) {
			s := llmtest.New(t, replies...)
			return s.Config(), func() int { return len(s.Requests()) }
		}},
		{name: "anthropic", start: func(t *testing.T, replies ...llmtest.Reply) (llm.Config, func() int) {
			s := llmtest.NewAnthropic(t, replies...)
			return s.Config(), func() int { return len(s.Requests()) }
		}},
		{name: "gemini", start: func(t *testing.T, replies ...llmtest.Reply) (llm.Config, func() int) {
			s := llmtest.NewGemini(t, replies...)
			return s.Config(), func() int { return len(s.Requests()) }
		}},
	}
}

func sunsetRequest() llm.Request {
	return llm.Request{
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "you organize images"}, {Role: llm.RoleUser, Content: "find sunsets"}},
		Tools: []llm.Tool{
			{Name: "ImageSearch", Description: "finds images", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)},
			{Name: "FolderOrganizer", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
	}
}

// The streamed answer is the one Chat returns, and its deltas put together
// are its text and each call's arguments, for every provider.
func TestStreamedAnswerIsTheAnswerOfChat(t *testing.T) {
	reply := llmtest.Reply{Content: "Looking for sunsets, then folders.",
		ToolCalls: []llmtest.ToolCall{
			{ID: "call_a", Name: "ImageSearch", Arguments: `{"query":"sunset"}`},
			{ID: "call_b", Name: "FolderOrganizer", Arguments: `{"by":"category"}`},
		},
		Usage: schemas.Tokens{Prompt: 321, Completion: 45}}
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			cfg, _ := p.start(t, reply, reply)
			c, err := llm.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			whole, wholeUsage, err := c.Chat(context.Background(), sunsetRequest())
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			args := map[int]*strings.Builder{}
			names := map[int]string{}
			streamed, streamedUsage, err := c.Stream(context.Background(), sunsetRequest(), func(d llm.Delta) {
				text.WriteString(d.Text)
				if d.Name != "" {
					names[d.Call] = d.Name
				}
				if d.Name != "" || d.Arguments != "" {
					if args[d.Call] == nil {
						args[d.Call] = &strings.Builder{}
					}
					args[d.Call].WriteString(d.Arguments)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if whole.Message.Content != reply.Content || len(whole.Message.ToolCalls) != 2 ||
				whole.Message.ToolCalls[0] != (llm.ToolCall{ID: "call_a", Name: "ImageSearch", Arguments: `{"query":"sunset"}`}) ||
				whole.Message.ToolCalls[1] != (llm.ToolCall{ID: "call_b", Name: "FolderOrganizer", Arguments: `{"by":"category"}`}) {
				t.Fatalf("Chat = %+v", whole.Message)
			}
			whole.ID, streamed.ID = "", ""
			if !equalResponses(whole, streamed) {
				t.Fatalf("streamed answer differs:\n chat   %+v\n stream %+v", whole, streamed)
			}
			if text.String() != reply.Content || names[0] != "ImageSearch" || names[1] != "FolderOrganizer" ||
				args[0].String() != `{"query":"sunset"}` || args[1].String() != `{"by":"category"}` {
				t.Fatalf("deltas: text %q, names %v, args %q %q", text.String(), names, args[0], args[1])
			}
			if wholeUsage.Tokens != (schemas.Tokens{Prompt: 321, Completion: 45}) || streamedUsage.Tokens != wholeUsage.Tokens {
				t.Fatalf("usage: chat %+v, stream %+v", wholeUsage.Tokens, streamedUsage.Tokens)
			}
		})
	}
}

func equalResponses(a, b llm.Response) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A delta reaches the caller while the provider is still writing: the
// scripted server holds the rest of its answer until the test has read
// the first piece.
func TestStreamDeliversDeltasAsTheyArrive(t *testing.T) {
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			gate := make(chan struct{})
			cfg, _ := p.start(t, llmtest.Reply{Content: "Sunsets found.", Chunks: []string{"Sunsets", " found."}, Gate: gate})
			c, err := llm.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			deltas := make(chan string, 8)
			type result struct {
				resp llm.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, _, err := c.Stream(context.Background(), sunsetRequest(), func(d llm.Delta) { deltas <- d.Text })
				done <- result{resp, err}
			}()
			select {
			case first := <-deltas:
				if first != "Sunsets" {
					close(gate)
					t.Fatalf("first delta = %q", first)
				}
			case r := <-done:
				close(gate)
				t.Fatalf("the call ended without a delta: %+v", r)
			}
			select {
			case r := <-done:
				t.Fatalf("the call ended before the server sent its second piece: %+v", r)
			default:
			}
			close(gate)
			r := <-done
			if r.err != nil || r.resp.Message.Content != "Sunsets found." {
				t.Fatalf("Stream = %+v, %v", r.resp, r.err)
			}
			if second := <-deltas; second != " found." {
				t.Fatalf("second delta = %q", second)
			}
		})
	}
}

// A stream refused before its first delta is retried like a call; the
// caller sees the pieces of the answer that succeeded, once.
func TestStreamRetriesBeforeTheFirstDelta(t *testing.T) {
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			cfg, requests := p.start(t, llmtest.RateLimited("0"), llmtest.Error(503, "overloaded"), llmtest.Answer("ok then"))
			c, err := llm.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			resp, usage, err := c.Stream(context.Background(), sunsetRequest(), func(d llm.Delta) { text.WriteString(d.Text) })
			if err != nil || resp.Message.Content != "ok then" || text.String() != "ok then" {
				t.Fatalf("Stream = %q (deltas %q), %v", resp.Message.Content, text.String(), err)
			}
			if requests() != 3 || usage.Attempts != 3 {
				t.Fatalf("%d requests, %d attempts; want 3 (429, 503, 200)", requests(), usage.Attempts)
			}
		})
	}
}
