package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
)

// An awaited task and a followed run leave no consumer on the server once
// their reader is done: before, each left one for nats.go's default of five
// minutes, and a soak's server grew with a consumer per chat turn.
func TestAwaitAndFollowLeaveNoConsumers(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := client.NewDispatcher(js, names, "test")
	for i := range 10 {
		id := fmt.Sprintf("t-%d", i)
		ev, err := bus.NewEvent(bus.TypeTaskCompleted, "test", schemas.AgentResult{Success: true})
		if err != nil {
			t.Fatal(err)
		}
		ev.SetExt(bus.ExtTaskID, id)
		msg, err := bus.Encode(names.Result("A", id), ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Await(ctx, names.Result("A", id), id); err != nil {
			t.Fatal(err)
		}
		_, stop, err := client.Follow(ctx, js, names, names.EventsOf(id), false)
		if err != nil {
			t.Fatal(err)
		}
		stop()
	}
	count := func(stream string) int {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Consumers
	}
	var results, events int
	if !fixture.Within(time.Minute, func() bool {
		results, events = count(names.ResultsStream()), count(names.EventsStream())
		return results == 0 && events == 0
	}) {
		t.Fatalf("a minute after 10 awaits and 10 follows ended, %s has %d consumers and %s %d; want 0",
			names.ResultsStream(), results, names.EventsStream(), events)
	}
}

// An Await whose consumer is lost and cannot be made again (here: deleted,
// with the stream at its limit of consumers; in a cluster, on the node that
// was cut off while no new one could be placed) returns by its deadline:
// nats.go's ordered consumer made it again for ever inside Next, whatever
// the context said, and a chat turn waiting on a tool call never ended.
func TestAwaitEndsWhenItsConsumerCannotBeMadeAgain(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := client.NewDispatcher(js, names, "test")
	done := make(chan error, 1)
	go func() {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		defer acancel()
		_, err := d.Await(actx, names.Result("A", "lost"), "lost")
		done <- err
	}()
	results, err := js.Stream(ctx, names.ResultsStream())
	if err != nil {
		t.Fatal(err)
	}
	var awaiting string
	fixture.Eventually(t, "the Await's consumer", func() bool {
		for name := range results.ConsumerNames(ctx).Name() {
			awaiting = name
		}
		return awaiting != ""
	})
	// Another consumer takes the stream's last place, and the Await's goes.
	if _, err := results.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "other", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	info, err := results.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.MaxConsumers = 1
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := results.DeleteConsumer(ctx, awaiting); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Await of a task whose consumer cannot be made returned no error")
		}
		t.Logf("Await ended: %v", err)
	case <-ctx.Done():
		t.Fatal("Await never returned, long after its 5 s deadline: its lost consumer was being made again for ever")
	}
}
