package embedded_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
)

// A server following rollouts maps mesh.task.<agent> as the rollouts
// bucket says, acknowledges the revision it applied, and removes the
// mapping with the rollout; a task published on a version's subject is
// never moved.
func TestFollowRolloutsMapsTaskSubject(t *testing.T) {
	srv := bustest.Start(t)
	n := srv.Names()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc := srv.Conn(t)
	js, _ := jetstream.New(nc)
	// The follower waits for the bucket, which the mesh's provisioning
	// (or 'agentmesh rollout') makes.
	if err := srv.Embedded().FollowRollouts(ctx, srv.Conn(t), n, slog.New(slog.DiscardHandler), nil); err != nil {
		t.Fatal(err)
	}
	kv, err := bus.EnsureRollouts(ctx, js, n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := nc.SubscribeSync("mesh.task.>")
	if err != nil {
		t.Fatal(err)
	}
	// where returns the subject a message published on subj arrives on.
	where := func(subj string) string {
		t.Helper()
		if err := nc.Publish(subj, []byte("x")); err != nil {
			t.Fatal(err)
		}
		m, err := got.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return m.Subject
	}
	put := func(r schemas.Rollout) uint64 {
		t.Helper()
		b, _ := json.Marshal(r)
		rev, err := kv.Put(ctx, r.Agent, b)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	applied := func(rev uint64) {
		t.Helper()
		ok := fixture.Within(5*time.Second, func() bool {
			e, err := kv.Get(ctx, bus.RolloutAppliedKey(bus.ServerKey("agentmesh")))
			if err != nil {
				return false
			}
			var a schemas.RolloutApplied
			return json.Unmarshal(e.Value(), &a) == nil && a.Revision >= rev && a.Error == ""
		})
		if !ok {
			t.Fatalf("revision %d not acknowledged", rev)
		}
	}

	applied(put(schemas.Rollout{Agent: "Echo", From: "1.0.0", To: "2.0.0", Weight: 100}))
	if s := where("mesh.task.Echo"); s != "mesh.task.Echo.v.2_0_0" {
		t.Errorf("promoted: a task on mesh.task.Echo arrived on %s, want mesh.task.Echo.v.2_0_0", s)
	}
	if s := where("mesh.task.Echo.v.1_0_0"); s != "mesh.task.Echo.v.1_0_0" {
		t.Errorf("a task pinned to 1.0.0 arrived on %s", s)
	}
	if s := where("mesh.task.Other"); s != "mesh.task.Other" {
		t.Errorf("another agent's task arrived on %s", s)
	}
	applied(put(schemas.Rollout{Agent: "Echo", From: "1.0.0", To: "2.0.0", Weight: 0}))
	if s := where("mesh.task.Echo"); s != "mesh.task.Echo.v.1_0_0" {
		t.Errorf("rolled back: a task arrived on %s, want mesh.task.Echo.v.1_0_0", s)
	}
	e, _ := kv.Get(ctx, "Echo")
	if err := kv.Delete(ctx, "Echo"); err != nil {
		t.Fatal(err)
	}
	applied(e.Revision() + 1)
	if s := where("mesh.task.Echo"); s != "mesh.task.Echo" {
		t.Errorf("rollout removed: a task arrived on %s, want mesh.task.Echo", s)
	}

	// A rollout the server cannot apply is acknowledged with why.
	b, _ := json.Marshal(schemas.Rollout{Agent: "Bad", From: "1.0.0", To: "1.0.0", Weight: 10})
	rev, err := kv.Put(ctx, "Bad", b)
	if err != nil {
		t.Fatal(err)
	}
	if !fixture.Within(5*time.Second, func() bool {
		e, err := kv.Get(ctx, bus.RolloutAppliedKey("agentmesh"))
		var a schemas.RolloutApplied
		return err == nil && json.Unmarshal(e.Value(), &a) == nil && a.Revision >= rev && a.Error != ""
	}) {
		t.Error("a rollout from and to the same version was acknowledged without an error")
	}
}
