package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
)

// While a cluster cannot answer (two of three nodes gone: JetStream has no
// leader and says 10008 "temporarily unavailable"), Follow waits for it
// until its ctx ends instead of failing at once: a client following a run
// or a chat turn while JetStream elects a new leader keeps following.
// (Await reads again the same way; cmd/agentmesh's TestClusterPartition
// shows it: chat turns awaiting their tool calls there failed with 10008.)
func TestFollowWaitsForAClusterWithoutLeader(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	nc, err := nats.Connect(c.Nodes[0].URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names := bus.MustNames("")
	pctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := bus.Provision(pctx, js, names, bus.ProvisionOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	c.Nodes[1].Shutdown()
	c.Nodes[2].Shutdown()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, stop, err := client.Follow(ctx, js, names, names.EventsOf("r1"), true)
	if err == nil {
		stop()
	}
	if ctx.Err() == nil {
		t.Errorf("Follow returned while its ctx lives, with %v: want it to wait for the cluster", err)
	}
}
