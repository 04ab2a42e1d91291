package bus_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
)

// A refusal notice, which every identity may read, carries the dead
// letter's Agentmesh-Dead-* headers and the task id only: none of the
// task's data or other headers.
func TestRefusalNoticeCarriesNoTask(t *testing.T) {
	dead := bus.DeadLetter("mesh.dead.TextAgent", &nats.Msg{Subject: "mesh.task.TextAgent", Data: []byte(`{"secret":1}`),
		Header: nats.Header{"ce-id": {"t-1"}, "ce-source": {"alice"}, bus.HeaderSender: {"jwt"}, "Nats-Msg-Id": {"t-1"}}}, "TextAgent", "forbidden: unsigned")
	dead.Header.Set(bus.HeaderDeadCode, "forbidden")
	dead.Header.Set(bus.HeaderDeadStream, "MESH_TASKS")
	dead.Header.Set(bus.HeaderDeadSequence, "42")
	for _, tc := range []struct{ id, want string }{{"t-1", "t-1"}, {"a.b", ""}, {"", ""}} {
		n := bus.RefusalNotice("mesh.dead.TextAgent.refused", dead, tc.id)
		if n.Subject != "mesh.dead.TextAgent.refused" || len(n.Data) != 0 {
			t.Fatalf("notice on %s with data %q", n.Subject, n.Data)
		}
		want := map[string]string{bus.HeaderDeadCode: "forbidden", bus.HeaderDeadReason: "forbidden: unsigned", bus.HeaderDeadAgent: "TextAgent",
			bus.HeaderDeadStream: "MESH_TASKS", bus.HeaderDeadSequence: "42", jetstream.MsgIDHeader: "refused-MESH_TASKS-42"}
		if tc.want != "" {
			want["ce-id"] = tc.want
		}
		if len(n.Header) != len(want) {
			t.Errorf("id %q: headers %v, want exactly %v", tc.id, n.Header, want)
		}
		for k, v := range want {
			if got := n.Header.Get(k); got != v {
				t.Errorf("id %q: %s = %q, want %q", tc.id, k, got, v)
			}
		}
	}
}
