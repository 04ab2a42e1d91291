package chat

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/schemas"
)

// messages are a turn's model messages: the model client's type in memory,
// the mesh's own (schemas.ChatMessage) when stored, so what is in KV does not
// depend on the client.
type messages []openai.ChatCompletionMessage

func (ms messages) MarshalJSON() ([]byte, error) {
	out := make([]schemas.ChatMessage, len(ms))
	for i, m := range ms {
		out[i] = schemas.ChatMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, schemas.ChatToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the mesh's shape, and the model client's that the
// previous layout stored (a tool call's name and arguments under
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
		out[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			name, args := tc.Name, tc.Arguments
			if tc.Function != nil {
				name, args = tc.Function.Name, tc.Function.Arguments
			}
			out[i].ToolCalls = append(out[i].ToolCalls, openai.ToolCall{ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: name, Arguments: args}})
		}
	}
	*ms = out
	return nil
}
