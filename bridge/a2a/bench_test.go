package a2a_test

import (
	"context"
	"testing"

	"github.com/agentmesh/agentmesh/bridge/a2a"
)

// BenchmarkSendMessage measures one blocking SendMessage to TextAgent
// through the bridge: HTTP, JSON-RPC, the part mapping, a JetStream
// dispatch, the agent, and the result back.
func BenchmarkSendMessage(b *testing.B) {
	r := newRig(b)
	cl, err := a2a.Dial(context.Background(), nil, r.agentURL("TextAgent"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := cl.SendMessage(ctx, a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("bench"))})
		if err != nil || res.Task.Status.State != a2a.StateCompleted {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
