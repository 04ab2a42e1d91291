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
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// A replica cut off from the rest of the cluster (or healed and still
// catching up) answers direct gets from its own, older copy: a run's
// header at an earlier revision, no record for a step the majority
// recorded since. A store with leader reads, on a connection to that node,
// never answers from it: while the node is cut off a read gets no answer
// (an error, not an old revision or "not found"), and once it is back the
// read returns what the majority wrote.
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
	// A run's header, which n3 holds before the cut.
	sd := (&state.RunSpec{ID: "run-1", Spec: pipelinespec.PipelineSpec{Name: "p", Steps: []pipelinespec.PipelineStep{{ID: "upper", Agent: "TextAgent"}}},
		Waves: [][]string{{"upper"}}}).Init()
	rev, err := majority.CreateRun(ctx, sd, &state.RunHeader{ID: "run-1", Status: schemas.RunRunning}, schemas.NewConversationState("run-1"))
	if err != nil {
		t.Fatal(err)
	}
	// Cut n3 off once its own replica holds the header and answers direct
	// gets (a follower joins the direct get group a moment after it is
	// current): cut off, it answers alone.
	for {
		c.Isolate(t)
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		_, have, err := direct.Header(pctx, "run-1")
		pcancel()
		if err == nil && have == rev {
			break
		}
		c.Rejoin(t)
		select {
		case <-ctx.Done():
			t.Fatalf("n3's replica never answered a direct get of the header (last: revision %d, %v)", have, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	h, _, err := majority.Header(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	h.Wave = 1
	newRev, err := majority.PutHeader(ctx, h, rev)
	if err != nil {
		t.Fatalf("the majority updating the header: %v", err)
	}
	if _, have, err := direct.Header(ctx, "run-1"); err != nil || have != rev {
		t.Fatalf("a direct get of the header on the cut-off node: revision %d, %v; want its stale revision %d", have, err, rev)
	}
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	if gh, have, err := fromLeader.Header(cctx, "run-1"); err == nil {
		t.Fatalf("a leader read of the header on the cut-off node: revision %d (wave %d); want no answer, never a stale one", have, gh.Wave)
	}
	ccancel()
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
	cctx, ccancel = context.WithTimeout(ctx, 2*time.Second)
	got, err := fromLeader.StepRecord(cctx, "run-1", "upper")
	ccancel()
	if err == nil || errors.Is(err, state.ErrNotFound) {
		t.Fatalf("a leader read on the cut-off node: record %+v, error %v; want no answer (the leader is out of reach), never a stale one", got, err)
	}

	c.Rejoin(t)
	if gh, have, err := fromLeader.Header(ctx, "run-1"); err != nil || have != newRev || gh.Wave != 1 {
		t.Fatalf("a leader read of the header once the node is back: %+v, revision %d, %v; want wave 1 at revision %d", gh, have, err, newRev)
	}
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
