package meshcore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/schemas"
)

// LastEvent reads the last event stored on a subject (through a consumer,
// which it deletes), owned or not, and says so when there is none.
func TestLastEvent(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := names.ForClient("alice")
	for i, subject := range []string{alice.Events("r1", "pipeline"), alice.Events("r1", "task"), names.Events("r2", "pipeline")} {
		msg, err := bus.EventMsg(subject, bus.TypeStepStarted, "test", schemas.StepEvent{RunID: "r", Step: "s", Attempt: i + 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		subject string
		attempt int // 0: none
	}{
		{alice.EventsOf("r1"), 2},
		{names.EventsOf("r1"), 2},
		{alice.Events("r1", "pipeline"), 1},
		{names.EventsOf("r2"), 3},
		{alice.EventsOf("r2"), 0},
		{names.ForClient("bob").EventsOf("r1"), 0},
	} {
		ev, err := meshcore.LastEvent(ctx, js, names, tt.subject)
		if tt.attempt == 0 {
			if !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Errorf("LastEvent(%s) = %v, %v; want none", tt.subject, ev.ID, err)
			}
			continue
		}
		var se schemas.StepEvent
		if err != nil || ev.DataAs(&se) != nil || se.Attempt != tt.attempt {
			t.Errorf("LastEvent(%s) = %+v, %v; want the event of attempt %d", tt.subject, se, err, tt.attempt)
		}
	}
	stream, err := js.Stream(ctx, names.EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	lister := stream.ListConsumers(ctx)
	for info := range lister.Info() {
		t.Errorf("consumer %s left on %s", info.Name, names.EventsStream())
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
}
