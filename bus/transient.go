package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TransientWait bounds how long Retry tries a call again while the server
// cannot answer it, as while a JetStream cluster elects a new leader after
// a node left (a few seconds) or the connection moves to another node.
const TransientWait = 30 * time.Second

// Transient reports an error of a NATS or JetStream call that says nothing
// about the request, only that no server answered it in time: a timeout,
// no responders, a reconnecting connection, a cluster without a leader or
// a stream offline. JetStream errors are told apart by their error code,
// not their status: a stream, server or account at a limit answers 503
// too, and is not transient (see Backlog). ctx ending is not transient.
func Transient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, ErrBacklogFull) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrConnectionReconnecting) {
		return true
	}
	api, ok := errors.AsType[*jetstream.APIError](err)
	return ok && transientAPI(api)
}

// Retry calls op until it succeeds, fails for good (not Transient), ctx
// ends or wait passed; between tries it waits 50 ms, doubling to 1 s, and
// tells onRetry (when not nil) why.
func Retry[T any](ctx context.Context, wait time.Duration, onRetry func(error), op func() (T, error)) (T, error) {
	deadline := time.Now().Add(wait)
	pause := 50 * time.Millisecond
	for {
		v, err := op()
		if !Transient(ctx, err) || time.Now().After(deadline) {
			return v, err
		}
		if onRetry != nil {
			onRetry(err)
		}
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("%w (the server did not answer: %v)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// publishTry bounds one try of a JetStream publish: an acknowledgement
// lost when the connection moved node never comes, and the next try is
// stored once by the message id.
const publishTry = 5 * time.Second

// Publish publishes msg to a stream and waits for its acknowledgement,
// trying again (each try at most 5 s) while no server answers, for
// TransientWait. msg should carry a Nats-Msg-Id, so that a try whose
// acknowledgement was lost is stored once. A stream, server or account at
// a limit fails it at once with a *BacklogError naming the stream and the
// limit (errors.Is(err, ErrBacklogFull)).
func Publish(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, _, err := publish(ctx, js, msg, opts)
	return ack, err
}

// PublishNew is Publish for a message that must be the first of its
// Nats-Msg-Id, as a submission naming its run id: when the stream answers
// the first try with a duplicate, another publish stored that id first
// and PublishNew fails with ErrDuplicate (the stream dropped msg). A
// duplicate answering a later try is this call's own earlier try, whose
// acknowledgement was lost: msg is stored, and that is no error.
func PublishNew(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, retried, err := publish(ctx, js, msg, opts)
	if err == nil && ack.Duplicate && !retried {
		return ack, fmt.Errorf("%w: %s %q is stored in %s already (as sequence %d)", ErrDuplicate, jetstream.MsgIDHeader, msg.Header.Get(jetstream.MsgIDHeader), ack.Stream, ack.Sequence)
	}
	return ack, err
}

// publish is Publish, and whether the answer is that of a try after the
// first.
func publish(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts []jetstream.PublishOpt) (*jetstream.PubAck, bool, error) {
	retried := false
	ack, err := Retry(ctx, TransientWait, func(error) { retried = true }, func() (*jetstream.PubAck, error) {
		tctx, cancel := context.WithTimeout(ctx, publishTry)
		defer cancel()
		return js.PublishMsg(tctx, msg, opts...)
	})
	if err != nil {
		return ack, retried, backlogError(ctx, js, msg.Subject, err)
	}
	return ack, retried, nil
}
