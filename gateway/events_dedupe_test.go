package gateway

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// A step's transition published twice with one message id (two replicas
// telling one end) reaches the mesh-wide event stream once.
func TestMeshEventsPassOnATransitionOnce(t *testing.T) {
	m := newTestMesh(t)
	events := m.openSSE(t, "/api/events")
	waitEvent(t, events, TypeRegistryChanged, nil)
	nc := m.srv.Conn(t)
	publish := func(step string) {
		ev, err := bus.NewEvent(bus.TypeStepCompleted, "test", schemas.StepEvent{RunID: "dup-1", Step: step, Status: schemas.StepCompleted})
		if err != nil {
			t.Fatal(err)
		}
		ev.SetExt(bus.ExtRunID, "dup-1")
		msg, err := bus.Encode(m.srv.Names().Events("dup-1", "pipeline"), ev)
		if err != nil {
			t.Fatal(err)
		}
		msg.Header.Set(jetstream.MsgIDHeader, "step-dup-1-"+step+"-completed")
		if err := nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	publish("a")
	publish("a")
	publish("b")
	var steps []string
	for len(steps) < 2 {
		ev := waitEvent(t, events, bus.TypeStepCompleted, nil)
		steps = append(steps, dataOf(ev)["step"].(string))
	}
	if steps[0] != "a" || steps[1] != "b" {
		t.Fatalf("the stream passed on steps %v, want a then b (a once)", steps)
	}
}
