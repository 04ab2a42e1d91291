package chat

import (
	"encoding/json"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// messages are a turn's model messages in the mesh's own shape
// (schemas.ChatMessage, which is llm.Message), in memory and in KV alike,
// so what is stored does not depend on the model's provider.
type messages []llm.Message

// UnmarshalJSON reads the mesh's shape, and the OpenAI client's that the
// layout before it stored (a tool call's name and arguments under
// "function").
func (ms *messages) UnmarshalJSON(b []byte) error {
	var in []struct {
		schemas.ChatMessage
		ToolCalls []struct {
			schemas.ChatToolCall
			Function *struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function,omitempty"`
		} `json:"tool_calls,omitempty"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	out := make(messages, len(in))
	for i, m := range in {
		out[i] = llm.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			call := tc.ChatToolCall
			if tc.Function != nil {
				call.Name, call.Arguments = tc.Function.Name, tc.Function.Arguments
			}
			out[i].ToolCalls = append(out[i].ToolCalls, call)
		}
	}
	*ms = out
	return nil
}
