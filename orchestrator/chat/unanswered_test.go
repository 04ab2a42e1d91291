package chat_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// A turn whose answer the events stream would not store (here: full; in a
// cluster: no leader for longer than a publish is retried) is not
// acknowledged: its request is delivered again and, once the stream takes
// events, answered with the turn's stored answer. Acknowledged, its sender
// never heard.
func TestTurnAnswerNotStoredIsDeliveredAgain(t *testing.T) {
	m := meshtest.New(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	m.Agent(t, chatSearchContract(), func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		started <- struct{}{}
		<-release
		fc := schemas.FromIDs(schemas.ContentImages, "sunset-1", "sunset-2")
		return fixture.OK("ImageSearch", "found 2 images", map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}), nil
	}, 1)
	chatReplica(t, m, nil, []string{"ImageSearch"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := m.Srv.Names()
	js := m.Srv.JetStream(t)
	conv, request, err := client.SendChat(ctx, js, names, "", "find sunset images", "test")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	// The events stream takes nothing more while the turn ends.
	info, err := m.Res.Events.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m.Srv.LimitStream(t, names.EventsStream(), int64(info.State.Msgs))
	close(release)

	store := state.New(m.Res.Conversations, m.Res.Runs)
	var err2 error
	ended := fixture.Until(ctx.Done(), func() bool {
		_, err2 = store.TurnOf(ctx, conv, request)
		if err2 != nil && !errors.Is(err2, state.ErrNotFound) {
			t.Fatalf("the turn never ended: %v", err2)
		}
		return err2 == nil // the turn is over and its answer was refused
	})
	if !ended {
		t.Fatalf("the turn never ended: %v", err2)
	}
	if _, err := js.UpdateStream(ctx, info.Config); err != nil {
		t.Fatal(err)
	}
	msg, _, ok := waitChatResponded(ctx, m, conv)
	if !ok {
		t.Fatal("the turn's answer was never stored once the events stream took events again: its request was acknowledged unanswered")
	}
	if msg.Header.Get(jetstream.MsgIDHeader) != "chat-"+request {
		t.Errorf("the answer is stored under message id %q, want chat-%s", msg.Header.Get(jetstream.MsgIDHeader), request)
	}
}

// waitChatResponded waits, until ctx ends, for the last chat event of conv
// to be its answer (chat.responded) and returns it; ok is false when ctx
// ended first.
func waitChatResponded(ctx context.Context, m *meshtest.Mesh, conv string) (msg *jetstream.RawStreamMsg, ev bus.Event, ok bool) {
	subject := m.Srv.Names().Events(conv, "chat")
	ok = fixture.Until(ctx.Done(), func() bool {
		var err error
		msg, err = m.Res.Events.GetLastMsgForSubject(ctx, subject)
		if err == nil {
			ev, err = bus.Decode(&nats.Msg{Subject: msg.Subject, Header: msg.Header, Data: msg.Data})
		}
		return err == nil && ev.Type == bus.TypeChatResponded
	})
	return msg, ev, ok
}

// A tool call whose task the stream acknowledged and did not keep (a node
// back from a partition answered as the stream's leader it no longer was;
// here a decoy stream takes the tasks for a while) is published again while
// the turn waits: the agent answers, and the turn completes instead of
// waiting out the agent's timeout.
func TestToolCallPublishedAgainUntilItsTaskIsKept(t *testing.T) {
	m := meshtest.New(t)
	search := chatSearchContract()
	search.TimeoutMS = time.Hour.Milliseconds()
	m.Agent(t, search, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		fc := schemas.FromIDs(schemas.ContentImages, "sunset-1")
		return fixture.OK("ImageSearch", "found 1 image", map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}), nil
	}, 1)
	chatReplica(t, m, nil, []string{"ImageSearch"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := m.Srv.Names()
	js := m.Srv.JetStream(t)
	tasks, err := m.Res.Tasks.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	moved := tasks.Config
	moved.Subjects = []string{"agentmesh-test.parked"}
	if _, err := js.UpdateStream(ctx, moved); err != nil {
		t.Fatal(err)
	}
	decoy, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DECOY", Subjects: tasks.Config.Subjects, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	conv, _, err := client.SendChat(ctx, js, names, "", "find sunset images", "test")
	if err != nil {
		t.Fatal(err)
	}
	if !fixture.Until(ctx.Done(), func() bool { // the tool call's task went to the decoy, acknowledged
		info, err := decoy.Info(ctx)
		return err == nil && info.State.Msgs > 0
	}) {
		t.Fatal("the tool call's task was never published")
	}
	if err := js.DeleteStream(ctx, "DECOY"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx, tasks.Config); err != nil {
		t.Fatal(err)
	}
	_, ev, ok := waitChatResponded(ctx, m, conv)
	if !ok {
		t.Fatal("the turn never ended: its tool call waited for a task nobody kept")
	}
	var resp schemas.ChatResponse
	if err := ev.DataAs(&resp); err != nil || resp.State != schemas.ChatCompleted {
		t.Fatalf("the turn ended %s (%v): %s", resp.State, err, resp.Output)
	}
}
