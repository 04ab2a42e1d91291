package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkStoreReads measures the reads WithLeaderReads sends to the
// stream's leader (a run's header and its slots; a step's record, written
// once, is still a direct get when found) on a single server, by direct
// get (any replica answers) and from the leader, alternating which goes
// first in each iteration so that both see the same machine:
// direct-ns/read, leader-ns/read and their ratio, leader/direct. (The
// orchestrator reads them only when its cache does not do: on one replica,
// well under one read per step in BenchmarkPipelineOverhead.)
func BenchmarkStoreReads(b *testing.B) {
	srv := bustest.Start(b)
	res := srv.Provision(b)
	js, err := jetstream.New(srv.Conn(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	direct := state.New(res.Conversations, res.Runs)
	leader := state.New(res.Conversations, res.Runs, state.WithLeaderReads(js))
	sd := (&state.RunSpec{ID: "bench-run", Spec: pipelinespec.PipelineSpec{Name: "bench", Steps: []pipelinespec.PipelineStep{{ID: "a", Agent: "A"}}},
		Waves: [][]string{{"a"}}}).Init()
	st := schemas.NewConversationState("bench-run")
	st.Slots["text"] = schemas.TextValue("hello", "bench")
	if _, err := direct.CreateRun(ctx, sd, &state.RunHeader{ID: "bench-run", Status: schemas.RunRunning}, st); err != nil {
		b.Fatal(err)
	}
	const reads = 2
	read := func(s *state.Store) time.Duration {
		start := time.Now()
		if _, _, err := s.Header(ctx, "bench-run"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.RunSlots(ctx, "bench-run"); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var directT, leaderT time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			directT += read(direct)
			leaderT += read(leader)
		} else {
			leaderT += read(leader)
			directT += read(direct)
		}
	}
	n := float64(b.N * reads)
	b.ReportMetric(float64(directT.Nanoseconds())/n, "direct-ns/read")
	b.ReportMetric(float64(leaderT.Nanoseconds())/n, "leader-ns/read")
	b.ReportMetric(float64(leaderT)/float64(directT), "leader/direct")
}
