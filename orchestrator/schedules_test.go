package orchestrator_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestScheduleTicksStartRunsNamedByTick: a tick on mesh.scheduled.<name>
// (what the server stores when a schedule fires) starts run
// <name>-<tick time>-<sequence>, which completes; a tick that holds no
// submission ends with the run's failed pipeline.completed (code
// malformed_event), not in silence.
func TestScheduleTicksStartRunsNamedByTick(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name})
	names := m.Srv.Names()
	js := m.Srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	spec := client.NewPipeline("tick").Step("up", text.Name).Param("op", "upper").Input("text", "text:tick tock").MustBuild()
	ev, err := bus.NewEvent(bus.TypePipelineSubmitted, "test", spec)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode(names.ScheduleTick("nightly"), ev)
	if err != nil {
		t.Fatal(err)
	}
	// The run's id is learnt from its events: the tick is taken (and, the
	// stream being a work queue, deleted) as soon as it is stored, so the
	// test cannot read the stored message's time after publishing.
	started := make(chan string, 1)
	tickSub, err := m.NC.Subscribe(names.AllEvents(), func(msg *nats.Msg) {
		if ev, err := bus.Decode(msg); err == nil && strings.HasPrefix(ev.Ext(bus.ExtRunID), "nightly-") {
			select {
			case started <- ev.Ext(bus.ExtRunID):
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tickSub.Unsubscribe()
	if err := m.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Second)
	var runID string
	select {
	case runID = <-started:
	case <-ctx.Done():
		t.Fatal("no run started for the tick")
	}
	// name-<the tick's stored time>-<its stream sequence>
	rest, ok := strings.CutSuffix(strings.TrimPrefix(runID, "nightly-"), "-"+strconv.FormatUint(ack.Sequence, 10))
	at, err := time.Parse("20060102T150405Z", rest)
	if !ok || err != nil || at.Before(before.Truncate(time.Second)) || at.After(after) {
		t.Fatalf("run id %q: want nightly-<stored time between %s and %s>-%d (%v)", runID, before.UTC().Format(time.RFC3339), after.UTC().Format(time.RFC3339), ack.Sequence, err)
	}
	if runID != bus.ScheduledRunID("nightly", at, ack.Sequence) {
		t.Fatalf("run id %q is not bus.ScheduledRunID's", runID)
	}
	run := meshtest.WaitRun(t, o.Store(), runID, 20*time.Second)
	if run.Status != schemas.RunCompleted || meshtest.TextOut(t, run, "up") != "TICK TOCK" {
		t.Fatalf("run %s: %s, output %q", runID, run.Status, meshtest.TextOut(t, run, "up"))
	}
	if sd, err := o.Store().Spec(ctx, runID); err != nil {
		t.Fatal(err)
	} else if sd.Owner != "" {
		t.Errorf("a scheduled run has owner %q, want none", sd.Owner)
	}

	bad, err := bus.NewEvent(bus.TypeChatRequested, "test", schemas.ChatRequest{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err = bus.Encode(names.ScheduleTick("odd"), bad)
	if err != nil {
		t.Fatal(err)
	}
	// Subscribe before publishing: the refusal's run id is the tick's.
	events := make(chan bus.Event, 64)
	sub, err := m.NC.Subscribe(names.AllEvents(), func(msg *nats.Msg) {
		if ev, err := bus.Decode(msg); err == nil && strings.HasPrefix(ev.Ext(bus.ExtRunID), "odd-") {
			events <- ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := m.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	ack, err = js.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-events:
			if ev.Type != bus.TypePipelineCompleted {
				continue
			}
			var re schemas.RunEvent
			if err := ev.DataAs(&re); err != nil || re.Status != schemas.RunFailed || re.Code != schemas.CodeMalformedEvent {
				t.Fatalf("the refused tick's end: %+v %v", re, err)
			}
			if !strings.HasSuffix(ev.Ext(bus.ExtRunID), "-"+strconv.FormatUint(ack.Sequence, 10)) {
				t.Errorf("the refusal names run %q, want the tick's (sequence %d)", ev.Ext(bus.ExtRunID), ack.Sequence)
			}
			fixture.Eventually(t, "every tick taken", func() bool {
				info, err := m.Res.Schedules.Info(context.Background(), jetstream.WithSubjectFilter(names.ScheduleTicks()))
				return err == nil && len(info.State.Subjects) == 0
			})
			return
		case <-ctx.Done():
			t.Fatal("a tick holding a chat request was not answered")
		}
	}
}
