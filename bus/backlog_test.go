package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A publish to a stream at its MaxMsgs fails at once with a BacklogError
// naming the stream and the limit, not after TransientWait of tries.
func TestPublishToFullStreamIsBacklogFull(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	srv.LimitStream(t, names.TasksStream(), 2)
	js := srv.JetStream(t)
	subj, _ := names.Task("Nobody")
	// Shorter than TransientWait: a publish tried again while the stream
	// stays full ends with the context instead.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	publish := func(i int) error {
		msg := nats.NewMsg(subj)
		msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprint("t-", i))
		msg.Data = []byte("{}")
		_, err := bus.Publish(ctx, js, msg)
		return err
	}
	for i := range 2 {
		if err := publish(i); err != nil {
			t.Fatalf("publish %d into a stream with room: %v", i, err)
		}
	}
	err := publish(2)
	if !errors.Is(err, bus.ErrBacklogFull) {
		t.Fatalf("publish into a full stream: %v, want ErrBacklogFull", err)
	}
	if !errors.Is(err, &schemas.ResultError{Code: schemas.CodeBacklogFull}) {
		t.Errorf("%v does not carry the code %s", err, schemas.CodeBacklogFull)
	}
	be, ok := errors.AsType[*bus.BacklogError](err)
	if !ok {
		t.Fatalf("%T is not a *bus.BacklogError", err)
	}
	if be.Stream != names.TasksStream() || be.Limit != "MaxMsgs 2" {
		t.Errorf("stream %q limit %q, want %s and MaxMsgs 2", be.Stream, be.Limit, names.TasksStream())
	}
	for _, want := range []string{"backlog_full", names.TasksStream(), "MaxMsgs 2", "maximum messages exceeded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if ctx.Err() != nil {
		t.Errorf("the publish was tried again until its context ended")
	}
}

// JetStream errors are told apart by their error code: a 503 of a stream
// at a limit is not transient, a 503 of a cluster without a leader is.
func TestTransientByErrorCode(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name               string
		err                *jetstream.APIError
		transient, backlog bool
	}{
		{"stream at MaxMsgs", &jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "maximum messages exceeded"}, false, true},
		{"stream at MaxBytes", &jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "maximum bytes exceeded"}, false, true},
		{"subject at MaxMsgsPerSubject", &jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "maximum messages per subject exceeded"}, false, true},
		{"message too large", &jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "message size exceeds maximum allowed"}, false, false},
		{"store closed", &jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "store closed"}, true, false},
		{"storage exceeded", &jetstream.APIError{Code: 500, ErrorCode: 10047, Description: "insufficient storage resources available"}, false, true},
		{"account over its limits", &jetstream.APIError{Code: 400, ErrorCode: 10002, Description: "resource limits exceeded for account"}, false, true},
		{"server over its limits", &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}, false, true},
		{"no leader", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true, false},
		{"not the leader", &jetstream.APIError{Code: 500, ErrorCode: 10009, Description: "JetStream cluster can not handle request"}, true, false},
		{"stream offline", &jetstream.APIError{Code: 500, ErrorCode: 10118, Description: "stream is offline"}, true, false},
		{"same message id being stored", &jetstream.APIError{Code: 409, ErrorCode: 10158, Description: "duplicate message id is in process"}, true, false},
		{"bare 503", &jetstream.APIError{Code: 503}, true, false},
		{"JetStream not enabled yet", &jetstream.APIError{Code: 503, ErrorCode: 10076, Description: "jetstream not enabled"}, true, false},
		{"stream not found", &jetstream.APIError{Code: 404, ErrorCode: 10059, Description: "stream not found"}, false, false},
	} {
		err := fmt.Errorf("nats: %w", c.err)
		if got := bus.Transient(ctx, err); got != c.transient {
			t.Errorf("%s: Transient %v, want %v", c.name, got, c.transient)
		}
		if got := bus.Backlog(err); got != c.backlog {
			t.Errorf("%s: Backlog %v, want %v", c.name, got, c.backlog)
		}
	}
}

// PublishNew of a message id the stream holds fails with ErrDuplicate
// naming the id and the stream; Publish takes the duplicate as stored.
func TestPublishNewRefusesATakenID(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	subj, _ := names.Task("Nobody")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := func() *nats.Msg {
		m := nats.NewMsg(subj)
		m.Header.Set(jetstream.MsgIDHeader, "once-1")
		m.Data = []byte("{}")
		return m
	}
	if _, err := bus.PublishNew(ctx, js, msg()); err != nil {
		t.Fatalf("first publish of the id: %v", err)
	}
	_, err := bus.PublishNew(ctx, js, msg())
	if !errors.Is(err, bus.ErrDuplicate) {
		t.Fatalf("second publish of the id: %v, want ErrDuplicate", err)
	}
	for _, want := range []string{`"once-1"`, names.TasksStream()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if ack, err := bus.Publish(ctx, js, msg()); err != nil || !ack.Duplicate {
		t.Errorf("Publish of the id again: ack %+v, err %v; want a duplicate ack and no error", ack, err)
	}
}
