package meshcore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/schemas"
)

func announcement(t *testing.T, agent, instance string) []byte {
	t.Helper()
	b, err := json.Marshal(schemas.Announcement{
		Contract: schemas.AgentContract{Name: agent, Capability: schemas.CapTransformation, Description: "test agent",
			Inputs: []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}}},
		Instance: schemas.InstanceInfo{ID: instance, Concurrency: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRegistryTracksInstances(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bucket := srv.Names().AgentsBucket()

	// One instance exists before the registry starts: the initial snapshot has it.
	if _, err := bus.PutTTL(ctx, js, bucket, "Alpha.a1", announcement(t, "Alpha", "a1"), time.Minute); err != nil {
		t.Fatal(err)
	}
	reg, err := meshcore.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	if info, ok := reg.Lookup("Alpha"); !ok || len(info.Instances) != 1 || info.Instances[0].ID != "a1" || info.Contract.Capability != schemas.CapTransformation {
		t.Fatalf("Lookup(Alpha) after start = %+v, %v; want one instance a1 with the contract", info, ok)
	}

	changed := reg.Changes()
	for _, k := range []string{"Alpha.a2", "Beta.b1"} {
		agent, inst, _ := cutKey(k)
		if _, err := bus.PutTTL(ctx, js, bucket, k, announcement(t, agent, inst), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("Changes did not fire after a new instance")
	}
	if err := reg.Wait(ctx, "Alpha", 2); err != nil {
		t.Fatal(err)
	}
	if err := reg.Wait(ctx, "Beta", 1); err != nil {
		t.Fatal(err)
	}
	agents := reg.Agents()
	if len(agents) != 2 || agents[0].Contract.Name != "Alpha" || agents[1].Contract.Name != "Beta" || len(agents[0].Instances) != 2 {
		t.Fatalf("Agents() = %+v; want Alpha (2 instances) then Beta", agents)
	}

	// A deleted key removes its instance; the last instance removes the agent.
	if err := res.Agents.Delete(ctx, "Beta.b1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, reg, func() bool { _, ok := reg.Lookup("Beta"); return !ok }, "Beta to leave after its key was deleted")
	if err := res.Agents.Purge(ctx, "Alpha.a2"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, reg, func() bool { i, _ := reg.Lookup("Alpha"); return len(i.Instances) == 1 }, "Alpha.a2 to leave after a purge")

	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if err := reg.Wait(short, "Gamma", 1); err == nil {
		t.Fatal("Wait for an agent that never comes returned nil")
	}
	reg.Stop()
	reg.Stop() // twice is fine
}

// An instance that stops heartbeating disappears within three heartbeats
// (its key's life) and two more (the grace for its next heartbeat).
func TestRegistryExpiresSilentInstance(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg, err := meshcore.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()

	const heartbeat = 400 * time.Millisecond // TTL 3 heartbeats = 1.2s, above the server's 1s minimum
	val := announcement(t, "Pulse", "p1")
	var last time.Time
	for range 4 {
		if _, err := bus.PutTTL(ctx, js, srv.Names().AgentsBucket(), "Pulse.p1", val, 3*heartbeat); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		time.Sleep(heartbeat) // the heartbeat itself, not a wait for a condition
	}
	if _, ok := reg.Lookup("Pulse"); !ok {
		t.Fatal("a heartbeating instance is not live")
	}
	waitFor(t, ctx, reg, func() bool { _, ok := reg.Lookup("Pulse"); return !ok }, "the silent instance to expire")
	gone := time.Since(last)
	t.Logf("silent instance gone %s after its last heartbeat (3+2 heartbeats = %s)", gone.Round(time.Millisecond), 5*heartbeat)
	if gone > 5*heartbeat+heartbeat/2 {
		t.Fatalf("silent instance took %s to disappear; want within 3+2 heartbeats (%s) plus scheduling slack", gone, 5*heartbeat)
	}
}

// The key of a live instance expires when the bucket cannot store its
// heartbeats for the key's life (the bucket's leader was on a node cut off
// and the others elect a new one); the instance puts it again as soon as
// the bucket is back. The registry keeps it live throughout: taken for
// gone, every pipeline naming it was refused as naming an unknown agent.
func TestRegistryKeepsInstanceWhoseKeyExpiredInAnOutage(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg, err := meshcore.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	// The test's own watch of the key: it heartbeats again once it sees
	// the expiry, as the instance does once the bucket stores again.
	w, err := res.Agents.Watch(ctx, "Pulse.p1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()

	const heartbeat = 400 * time.Millisecond // TTL 3 heartbeats = 1.2s, above the server's 1s minimum
	val := announcement(t, "Pulse", "p1")
	put := func() {
		if _, err := bus.PutTTL(ctx, js, srv.Names().AgentsBucket(), "Pulse.p1", val, 3*heartbeat); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		put()
		time.Sleep(heartbeat) // the heartbeat itself, not a wait for a condition
	}
	gone := make(chan struct{}, 1)
	go func() {
		for {
			ch := reg.Changes()
			if _, ok := reg.Lookup("Pulse"); !ok {
				gone <- struct{}{}
				return
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	for e := range w.Updates() {
		if e != nil && e.Operation() != jetstream.KeyValuePut {
			break // expired: the bucket "is back", the instance heartbeats
		}
	}
	put()
	for range 3 {
		time.Sleep(heartbeat)
		put()
	}
	select {
	case <-gone:
		t.Fatal("a live instance whose key expired once was taken for gone")
	default:
	}
	if _, ok := reg.Lookup("Pulse"); !ok {
		t.Fatal("the instance is not live after heartbeating again")
	}
}

func waitFor(t *testing.T, ctx context.Context, reg *meshcore.Registry, cond func() bool, what string) {
	t.Helper()
	for {
		ch := reg.Changes()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; agents: %+v", what, reg.Agents())
		}
	}
}

func cutKey(k string) (string, string, bool) {
	for i := range k {
		if k[i] == '.' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

// A watch of the agents bucket ends when its consumer cannot be made again
// after the cluster moved (a leader election answering 10008, a node cut
// off; here: the bucket gone for a while). The registry watches again once
// it can, instead of keeping the view it had for good: an agent that
// announces afterwards is seen.
func TestRegistryWatchesAgainAfterItsWatchEnded(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The test's own watch, made just before the registry's and fed the
	// same: it ends just before the registry's does.
	probe, err := res.Agents.WatchAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := meshcore.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	if _, err := res.Agents.Put(ctx, "Alpha.a1", announcement(t, "Alpha", "a1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, reg, func() bool { _, ok := reg.Lookup("Alpha"); return ok }, "Alpha")
	if err := js.DeleteKeyValue(ctx, srv.Names().AgentsBucket()); err != nil {
		t.Fatal(err)
	}
	for range probe.Updates() {
	}
	// A moment more for the registry's watch, a few milliseconds younger,
	// to end as well (its consumer's heartbeats stopped with the bucket):
	// not a condition the test can poll for.
	time.Sleep(2 * time.Second)
	res = srv.Provision(t)
	// Twice: a watch that was not ended but made its consumer again on the
	// new bucket starts after the sequence it saw last (Alpha's, 1).
	for range 2 {
		if _, err := res.Agents.Put(ctx, "Beta.b1", announcement(t, "Beta", "b1")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, reg, func() bool { _, ok := reg.Lookup("Beta"); return ok }, "Beta, announced after the watch ended")
}
