package prompt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A PromptAgent's model streams: while it writes, the text reaches a
// reader of the task's conversation (mesh.delta.<conversation>) piece by
// piece, naming the task and the agent; the scripted model holds the rest
// of its answer until the test has read the first piece, and the result
// holds the whole answer.
func TestPromptAgentStreamsItsModelsText(t *testing.T) {
	gate := make(chan struct{})
	srv := llmtest.New(t, llmtest.Reply{Content: "Dusk falls on the sea.", Chunks: []string{"Dusk falls", " on the sea."}, Gate: gate})
	cfg, err := prompt.Parse([]byte(toolYAML))
	if err != nil {
		t.Fatal(err)
	}
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	a, err := prompt.New(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	bs := bustest.Start(t)
	bs.Provision(t)
	meshtest.Serve(t, bs.Conn(t), a)

	const conv = "c-stream"
	deltas := make(chan schemas.ChatDelta, 16)
	stop, err := meshcore.FollowDeltas(bs.Conn(t), bs.Names(), conv, func(d schemas.ChatDelta) { deltas <- d })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	progress, err := bs.Conn(t).SubscribeSync(bs.Names().Events(conv, "task"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := meshcore.NewDispatcher(bs.JetStream(t), bs.Names(), "test")
	replyTo := "mesh.result.Echoer.test.c-stream"
	id, err := d.Dispatch(ctx, "Echoer", schemas.TaskRequest{Instruction: "a line about dusk"}, meshcore.DispatchMeta{ConversationID: conv, ReplyTo: replyTo})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case first := <-deltas:
		if first.Text != "Dusk falls" || first.TaskID != id || first.Agent != "Echoer" || first.ConversationID != conv || first.Seq != 1 {
			t.Errorf("first piece %+v", first)
		}
	case <-ctx.Done():
		t.Fatal("no piece of text while the model was writing")
	}
	close(gate)
	res, err := d.Await(ctx, replyTo, id)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := res.Result.Outputs["answer"].Text(); !res.Result.Success || text != "Dusk falls on the sea." {
		t.Errorf("result %+v", res.Result)
	}
	pm, err := progress.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal("no progress event while the model wrote")
	}
	pev, _ := bus.Decode(pm)
	var p schemas.TaskProgress
	if err := pev.DataAs(&p); err != nil || p.Message != "writing" || p.TaskID != id {
		t.Errorf("progress %+v, %v", p, err)
	}
	if second := <-deltas; second.Text != " on the sea." || second.Seq != 2 {
		t.Errorf("second piece %+v", second)
	}
	if !strings.Contains(srv.Requests()[0].MessagesOf("user")[0].Content, "a line about dusk") {
		t.Error("instruction not sent")
	}
}
