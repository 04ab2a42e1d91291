package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A conversation with tool calls goes to the Gemini API in its shape:
// system messages as the systemInstruction, tool calls as functionCall
// parts of a "model" content, the tool messages that answer them as one
// user content of functionResponse parts, tools as functionDeclarations
// with their JSON Schema; the answer's functionCall parts come back as tool
// calls, priced from the one price table.
func TestGeminiSpeaksTheGenerateContentAPI(t *testing.T) {
	srv := llmtest.NewGemini(t, llmtest.Reply{
		ToolCalls: []llmtest.ToolCall{{Name: "FolderOrganizer", Arguments: `{"by":"category"}`}},
		Usage:     schemas.Tokens{Prompt: 1000, Completion: 100},
	})
	cfg := srv.Config()
	cfg.Model = "gemini-2.5-flash"
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := sunsetRequest()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: "Searching.", ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "ImageSearch", Arguments: `{"query":"sunset"}`}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Name: "ImageSearch", Content: "3 images"},
	)
	req.Output = &llm.OutputSchema{Name: "plan", Schema: json.RawMessage(`{"type":"object"}`)}
	resp, usage, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0] != (llm.ToolCall{Name: "FolderOrganizer", Arguments: `{"by":"category"}`}) {
		t.Fatalf("answer = %+v", resp)
	}
	if want := (1000*0.30 + 100*2.50) / 1e6; usage.Tokens != (schemas.Tokens{Prompt: 1000, Completion: 100}) || usage.Cost != want {
		t.Fatalf("usage = %+v, want cost %v", usage, want)
	}
	got := srv.Requests()[0]
	if got.Model != "gemini-2.5-flash" || got.Stream || got.Header.Get("X-Goog-Api-Key") != "test-key" {
		t.Fatalf("request: model %q, stream %v, key %q", got.Model, got.Stream, got.Header.Get("X-Goog-Api-Key"))
	}
	b := got.Body
	if b.SystemInstruction == nil || len(b.SystemInstruction.Parts) != 1 || b.SystemInstruction.Parts[0].Text != "you organize images" {
		t.Errorf("systemInstruction = %+v", b.SystemInstruction)
	}
	if strings.Join(got.ToolNames(), ",") != "ImageSearch,FolderOrganizer" ||
		!sameJSON(b.Tools[0].FunctionDeclarations[0].ParametersJSONSchema, req.Tools[0].Parameters) {
		t.Errorf("tools = %+v", b.Tools)
	}
	if len(b.Contents) != 3 || b.Contents[0].Role != "user" || b.Contents[1].Role != "model" || b.Contents[2].Role != "user" {
		t.Fatalf("contents = %+v", b.Contents)
	}
	model := b.Contents[1].Parts
	if len(model) != 2 || model[0].Text != "Searching." || model[1].FunctionCall == nil || model[1].FunctionCall.Name != "ImageSearch" ||
		model[1].FunctionCall.ID != "call_1" || string(model[1].FunctionCall.Args) != `{"query":"sunset"}` {
		t.Errorf("model content = %+v", model)
	}
	fr := b.Contents[2].Parts
	if len(fr) != 1 || fr[0].FunctionResponse == nil || fr[0].FunctionResponse.Name != "ImageSearch" || fr[0].FunctionResponse.Response["content"] != "3 images" {
		t.Errorf("function response = %+v", fr)
	}
	if g := b.GenerationConfig; g == nil || g.ResponseMimeType != "application/json" || string(g.ResponseJSONSchema) != `{"type":"object"}` || g.MaxOutputTokens != llm.DefaultMaxTokens {
		t.Errorf("generationConfig = %+v", g)
	}
}

func TestGeminiErrors(t *testing.T) {
	srv := llmtest.NewGemini(t, llmtest.Error(403, "API key not valid. Please pass a valid API key."))
	c, _ := llm.New(srv.Config())
	_, _, err := c.Complete(context.Background(), "", "hi")
	if !errors.Is(err, llm.ErrUnauthorized) || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests, want ErrUnauthorized after 1", err, len(srv.Requests()))
	}
	for _, want := range []string{"403", llm.EnvGeminiAPIKey, "API key not valid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
