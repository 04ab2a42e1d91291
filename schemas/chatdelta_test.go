package schemas_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

// chat-delta.schema.json describes schemas.ChatDelta exactly (the
// TypeScript SDK's ChatDelta type is generated from it): what the
// orchestrator sends passes it, and a field the struct does not have, a
// missing one or a seq of 0 fails it.
func TestChatDeltaSchema(t *testing.T) {
	raw, err := json.Marshal(schemas.ChatDelta{ConversationID: "c-42", Turn: 1, Step: 4, Seq: 1, Text: "I found 12 sunset"})
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.ValidateJSON("chat-delta", raw); err != nil {
		t.Fatalf("a ChatDelta fails chat-delta.schema.json: %v", err)
	}
	for _, tc := range []struct{ doc, says string }{
		{`{"conversation_id":"c-42","turn":1,"step":4,"seq":1,"text":"x","extra":true}`, "extra"},
		{`{"conversation_id":"c-42","turn":1,"step":4,"seq":1}`, "text"},
		{`{"conversation_id":"c-42","turn":1,"step":4,"seq":0,"text":"x"}`, "/seq"},
		{`{"conversation_id":"c 42","turn":1,"step":4,"seq":1,"text":"x"}`, "/conversation_id"},
	} {
		err := schemas.ValidateJSON("chat-delta", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error naming %s", tc.doc, err, tc.says)
		}
	}
}
