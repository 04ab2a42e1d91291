package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
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
	for {
		results, events := count(names.ResultsStream()), count(names.EventsStream())
		if results == 0 && events == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("a minute after 10 awaits and 10 follows ended, %s has %d consumers and %s %d; want 0",
				names.ResultsStream(), results, names.EventsStream(), events)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
