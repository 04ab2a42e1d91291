package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// A replica cut off from the rest of the cluster (or healed and still
// catching up) answers direct gets from its own, older copy: a step's
// record written by the majority since is not there. A store with leader
// reads, on a connection to that node, never answers from it: while the
// node is cut off a read gets no answer (an error, not "not found"), and
// once it is back the read returns what the majority wrote.
func TestLeaderReadsNeverAnswerFromALaggingReplica(t *testing.T) {
	c := bustest.StartCuttable(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js1, _ := jetstream.New(c.NodeConn(t, 0))
	kv1, err := js1.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "leader_runs", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	// The cut node holds a current replica, not the leader: a leader cut
	// off answers for a while, until it finds it lost its majority.
	leadAwayFrom(t, ctx, js1, "KV_leader_runs", "n3")
	js3, _ := jetstream.New(c.NodeConn(t, 2))
	kv3, err := js3.KeyValue(ctx, "leader_runs")
	if err != nil {
		t.Fatal(err)
	}
	direct, fromLeader := state.New(nil, kv3), state.New(nil, kv3, state.WithLeaderReads(js3))
	majority := state.New(nil, kv1)

	c.Isolate(t)
	rec := &state.StepState{ID: "upper", Agent: "TextAgent", Status: schemas.StepCompleted,
		Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("HELLO", "test")}}
	if _, err := majority.RecordStep(ctx, "run-1", rec); err != nil {
		t.Fatalf("the majority recording a step: %v", err)
	}
	// The rig: n3's own replica is behind and answers direct gets.
	if _, err := direct.StepRecord(ctx, "run-1", "upper"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("a direct get on the cut-off node: %v, want its stale answer (not found): the node was not cut off", err)
	}
	// A leader read there: no leader answers, so no answer at all.
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	got, err := fromLeader.StepRecord(cctx, "run-1", "upper")
	ccancel()
	if err == nil || errors.Is(err, state.ErrNotFound) {
		t.Fatalf("a leader read on the cut-off node: record %+v, error %v; want no answer (the leader is out of reach), never a stale one", got, err)
	}

	c.Rejoin(t)
	got, err = fromLeader.StepRecord(ctx, "run-1", "upper")
	if err != nil {
		t.Fatalf("a leader read once the node is back: %v", err)
	}
	if got.Status != schemas.StepCompleted || string(got.Outputs["text"].Value) != string(rec.Outputs["text"].Value) {
		t.Fatalf("a leader read once the node is back: %+v, want the record the majority wrote", got)
	}
}

// leadAwayFrom moves the leadership of stream off node and waits until
// node is a current replica of it.
func leadAwayFrom(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, node string) {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": "n1"}})
	for {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch cl := info.Cluster; {
		case cl == nil || cl.Leader == "":
		case cl.Leader == node:
			if _, err := js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, req); err != nil {
				t.Logf("stepdown: %v", err)
			}
		default:
			current := false
			for _, r := range cl.Replicas {
				current = current || (r.Name == node && r.Current && !r.Offline)
			}
			if current {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("stream %s: %s never became a current follower", stream, node)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
