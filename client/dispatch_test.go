package client_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// A task stored behind its agent's consumer (delivered past it, pending on
// none of its deliveries: what a consumer's leader change through a
// partition left) is never delivered, and a dispatch again under its id
// is a duplicate. Dispatch sees the duplicate, finds the task stranded,
// and publishes it again under a new message id: the consumer delivers
// it, the same task event, and the stream holds one copy.
func TestDispatchAgainBringsStrandedTask(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var logged strings.Builder
	d := client.NewDispatcher(js, names, "test").WithLogger(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "test")}}
	meta := client.DispatchMeta{TaskID: "stranded-1", ReplyTo: names.Result("A", "stranded-1")}
	if _, err := d.Dispatch(ctx, "A", task, meta); err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, names.TasksStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seq := info.State.LastSeq
	subject, _ := names.Task("A")
	// The agent's consumer, as the agents make it, moved past the task
	// (a consumer reset): delivered past it, nothing unacknowledged.
	cons, err := js.CreateConsumer(ctx, names.TasksStream(), jetstream.ConsumerConfig{
		Durable: "A", FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.ResetConsumerToSequence(ctx, "A", seq+1); err != nil {
		t.Fatal(err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Delivered.Stream != seq || ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("the consumer is not past the task: delivered %d (task %d), pending %d, unacknowledged %d", ci.Delivered.Stream, seq, ci.NumPending, ci.NumAckPending)
	}

	if _, err := d.Dispatch(ctx, "A", task, meta); err != nil {
		t.Fatalf("dispatching the stranded task again: %v", err)
	}
	if ci, err = cons.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if ci.NumPending != 1 {
		t.Fatalf("after the dispatch again the consumer has %d tasks to deliver, want the stranded one", ci.NumPending)
	}
	if info, err = stream.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("%s holds %d messages, want the task once", names.TasksStream(), info.State.Msgs)
	}
	m, err := cons.Next(jetstream.FetchContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := bus.DecodeJS(m)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != meta.TaskID {
		t.Errorf("delivered task %q, want %q", ev.ID, meta.TaskID)
	}

	if !strings.Contains(logged.String(), "a stranded task was published again") {
		t.Errorf("the dispatcher did not log the stranded task: %s", logged.String())
	}
	if err := m.Ack(); err != nil {
		t.Fatal(err)
	}

	// A task the consumer has delivered and awaits an acknowledgement of
	// is not stranded: a dispatch again leaves it alone.
	held := client.DispatchMeta{TaskID: "held-1", ReplyTo: names.Result("A", "held-1")}
	if _, err := d.Dispatch(ctx, "A", task, held); err != nil {
		t.Fatal(err)
	}
	if _, err := cons.Next(jetstream.FetchContext(ctx)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(ctx, "A", task, held); err != nil {
		t.Fatal(err)
	}
	if info, err = stream.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if ci, err = cons.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || ci.NumAckPending != 1 || ci.NumPending != 0 {
		t.Errorf("a task held by an agent: stream holds %d, consumer %d unacknowledged and %d to deliver; want 1, 1, 0", info.State.Msgs, ci.NumAckPending, ci.NumPending)
	}
}
