package security_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/memory"
)

// TestMemoryIsTheOrchestrators: on a secure mesh the orchestrator writes
// and reads the memory bucket (the chat loop's remembered facts), and a
// client reads and writes no one's facts there, not even its own: it sees
// them only as the recall of its own turns.
func TestMemoryIsTheOrchestrators(t *testing.T) {
	m := startSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	o := m.connect(t, bus.Identity{Role: bus.RoleOrchestrator})
	store := memory.New(o.js, m.names)
	f, err := store.Remember(ctx, memory.Fact{Identity: alice.Name, Text: "alice's door code is 4711", Source: "remember"})
	if err != nil {
		t.Fatalf("the orchestrator could not remember: %v", err)
	}
	if facts, err := store.List(ctx, alice.Name); err != nil || len(facts) != 1 {
		t.Fatalf("the orchestrator's list of alice's facts: %+v, %v", facts, err)
	}
	bucket := m.names.MemoryBucket()
	for _, id := range []bus.Identity{mallory, alice} {
		c := m.connect(t, id)
		kv, err := c.js.KeyValue(ctx, bucket) // binding reads stream metadata only
		if err != nil {
			t.Fatal(err)
		}
		short, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err = kv.Get(short, alice.Name+"."+f.ID)
		scancel()
		if err == nil {
			t.Fatalf("%s read alice's fact", id.Name)
		}
		c.denied(t, "Publish", "$JS.API.DIRECT.GET.KV_"+bucket+".$KV."+bucket+"."+alice.Name+"."+f.ID)
		msg := nats.NewMsg(m.names.KVPut(bucket, alice.Name+"."+f.ID))
		msg.Data = []byte(`{"text":"planted"}`)
		c.publishDenied(t, msg)
	}
	if facts, err := store.List(ctx, alice.Name); err != nil || len(facts) != 1 || facts[0].Text != f.Text {
		t.Fatalf("alice's facts after the attempts: %+v, %v", facts, err)
	}
}
