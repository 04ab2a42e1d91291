package resolvers_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestCollectionTravelsBetweenAgents is the pipeline shape: one agent's
// 100,000-ID output becomes the next agent's task input, through the tasks
// stream, as a CloudEvent. Spilled, it fits in one message; the receiver sees
// every ID in order.
func TestCollectionTravelsBetweenAgents(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	ctx := testCtx(t)
	js := srv.JetStream(t)
	names := srv.Names()
	subject, err := names.Task("organizer")
	if err != nil {
		t.Fatal(err)
	}
	ids := manyIDs(100_000)
	output := schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ids...).WithSource("SEARCH"), "search")

	task := func(v schemas.TypedValue) *nats.Msg {
		ev, err := bus.NewEvent(bus.TypeTaskRequested, "search", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"files": v}})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := bus.Encode(subject, ev)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}

	// Unspilled, the task is larger than a message may be.
	if _, err := js.PublishMsg(ctx, task(output)); err == nil || !strings.Contains(strings.ToLower(err.Error()), "payload") {
		t.Fatalf("publishing 100,000 ids inline: %v, want a payload error (else this test proves nothing)", err)
	}

	// Sender side: spill before publishing.
	cols := resolvers.NewCollections(res.Files, 0)
	spilled, err := cols.SpillValue(ctx, output)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, task(spilled)); err != nil {
		t.Fatalf("publishing the spilled collection: %v", err)
	}

	// Receiver side: consume the task, resolve, see everything in order.
	cons, err := res.Tasks.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "organizer", FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	m, err := cons.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(); err != nil {
		t.Fatal(err)
	}
	ev, err := bus.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
	if err != nil {
		t.Fatal(err)
	}
	var req schemas.TaskRequest
	if err := ev.DataAs(&req); err != nil {
		t.Fatal(err)
	}
	in, err := cols.ResolveValue(ctx, req.Inputs["files"])
	if err != nil {
		t.Fatal(err)
	}
	fc, err := in.Files()
	if err != nil {
		t.Fatal(err)
	}
	got := fc.IDs()
	if len(got) != len(ids) {
		t.Fatalf("receiver saw %d ids, want %d", len(got), len(ids))
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("receiver ids[%d] = %q, want %q", i, got[i], ids[i])
		}
	}
}
