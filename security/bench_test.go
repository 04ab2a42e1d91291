package security_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// BenchmarkSecureTaskRoundTrip measures what TLS and JWT authentication with
// permissions cost on the task round trip: the same no-op task through
// MESH_TASKS and back, on a plain embedded server (the baseline) and on a
// secure one where the agent and the caller are their own identities, in
// the same run. Both report p50-ns; tls-auth reports its time per round
// trip over plain's as x-plain.
func BenchmarkSecureTaskRoundTrip(b *testing.B) {
	ctx := context.Background()
	plainSrv := bustest.Start(b)
	plain, closePlain, err := benchsuite.TaskRoundTrip(ctx, benchsuite.Env{NC: plainSrv.Conn(b), JS: plainSrv.JetStream(b), Names: plainSrv.Names(), Res: plainSrv.Provision(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer closePlain.Close()

	sec := securetest.Start(b)
	caller := bus.Identity{Role: bus.RoleClient, Name: "bench"}
	nc := sec.Connect(b, caller)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	secure, closeSecure, err := benchsuite.TaskRoundTrip(ctx, benchsuite.Env{
		NC: nc, JS: js, Names: sec.Names, Res: sec.Res, Client: caller.Name,
		AgentNC: sec.Connect(b, bus.Identity{Role: bus.RoleAgent, Name: benchsuite.NoopAgentName}),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer closeSecure.Close()

	// The secure side reports its time per round trip over the plain
	// side's of this run as x-plain (testing.Benchmark cannot nest here).
	var plainNs float64
	b.Run("plain", func(b *testing.B) {
		plain.Mesh(b)
		plainNs = float64(b.Elapsed()) / float64(b.N)
	})
	b.Run("tls-auth", func(b *testing.B) {
		secure.Mesh(b)
		if plainNs > 0 {
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/plainNs, "x-plain")
		}
	})
}
