package meshcore

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
)

// orderedInactive is how long the server keeps the consumer of a Follow or
// an Await once its reader has gone: a reader pulls all along, so only a
// stopped one is idle this long. Without it each turn, awaited task and
// followed run would leave a consumer on the server for nats.go's default
// of five minutes (thousands, under load).
const orderedInactive = 5 * time.Second

// Follow delivers the events stored on subject (mesh.events.<id>.> for
// everything of a run or conversation, names.Events(id, "chat") for one
// kind) in order, through an ordered consumer on the events stream: from
// the stream's start, or with fromNow only those stored after the call (the
// stream's last sequence is the server's, so client clocks do not matter).
// Messages that are not CloudEvents are skipped. Call stop when done; the
// channel is never closed.
func Follow(ctx context.Context, js jetstream.JetStream, names bus.Names, subject string, fromNow bool) (events <-chan bus.Event, stop func(), err error) {
	out := make(chan bus.Event, 64)
	// Made again while the cluster cannot answer (bus.Transient: a node
	// left and JetStream elects a new leader), for up to bus.TransientWait.
	cc, err := bus.Retry(ctx, bus.TransientWait, nil, func() (jetstream.ConsumeContext, error) {
		return follow(ctx, js, names, subject, fromNow, out)
	})
	if err != nil {
		return nil, nil, err
	}
	return out, cc.Stop, nil
}

func follow(ctx context.Context, js jetstream.JetStream, names bus.Names, subject string, fromNow bool, out chan<- bus.Event) (jetstream.ConsumeContext, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, InactiveThreshold: orderedInactive}
	if fromNow {
		s, err := js.Stream(ctx, names.EventsStream())
		if err != nil {
			return nil, fmt.Errorf("following %s: stream %s: %w", subject, names.EventsStream(), err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("following %s: stream %s: %w", subject, names.EventsStream(), err)
		}
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, info.State.LastSeq+1
	}
	cons, err := js.OrderedConsumer(ctx, names.EventsStream(), cfg)
	if err != nil {
		return nil, fmt.Errorf("following %s: %w", subject, err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		ev, err := bus.DecodeJS(msg)
		if err != nil {
			return
		}
		select {
		case out <- ev:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return nil, fmt.Errorf("following %s: %w", subject, err)
	}
	return cc, nil
}

// LastEvent returns the last event stored on subject in the events stream,
// or an error wrapping jetstream.ErrMsgNotFound when there is none. It
// reads through a consumer of its own filtered on subject, not a direct
// get: on a secure mesh a client may read the events stream only that way,
// and only its own events (names.ForClient(c).EventsOf(id)). The consumer
// is deleted before it returns (and ends by itself if that fails).
func LastEvent(ctx context.Context, js jetstream.JetStream, names bus.Names, subject string) (bus.Event, error) {
	cons, err := js.CreateConsumer(ctx, names.EventsStream(), jetstream.ConsumerConfig{
		FilterSubject: subject, DeliverPolicy: jetstream.DeliverLastPolicy, AckPolicy: jetstream.AckNonePolicy,
		InactiveThreshold: orderedInactive, MemoryStorage: true})
	if err != nil {
		return bus.Event{}, fmt.Errorf("reading the last event on %s: %w", subject, err)
	}
	defer func() { // detached from ctx, which may have ended
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = js.DeleteConsumer(dctx, names.EventsStream(), cons.CachedInfo().Name)
	}()
	if cons.CachedInfo().NumPending == 0 {
		return bus.Event{}, fmt.Errorf("no event on %s: %w", subject, jetstream.ErrMsgNotFound)
	}
	msg, err := cons.Next(jetstream.FetchContext(ctx))
	if err != nil {
		return bus.Event{}, fmt.Errorf("reading the last event on %s: %w", subject, err)
	}
	return bus.DecodeJS(msg)
}
