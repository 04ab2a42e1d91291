package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// PurgeAcked removes from a work-queue stream the messages its consumers
// have already acknowledged. Normally the server removes a message the
// moment it is acknowledged; a server that crashes between recording a
// consumer's ack and removing the message can come back with the message
// still stored below the consumer's ack floor, where the consumer will never
// deliver it again and the stream never drops it. PurgeAcked purges, per
// consumer and filter subject, everything up to the consumer's ack floor,
// and returns how many messages it removed. It does nothing to a stream
// whose first message is above every ack floor, which is the normal case.
func PurgeAcked(ctx context.Context, s jetstream.Stream) (uint64, error) {
	info := s.CachedInfo()
	if info == nil || info.Config.Retention != jetstream.WorkQueuePolicy || info.State.Msgs == 0 {
		return 0, nil
	}
	name := info.Config.Name
	var purged uint64
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		floor := ci.AckFloor.Stream
		if floor < info.State.FirstSeq {
			continue
		}
		filters := ci.Config.FilterSubjects
		if ci.Config.FilterSubject != "" {
			filters = append(filters, ci.Config.FilterSubject)
		}
		if len(filters) == 0 {
			filters = []string{""}
		}
		for _, f := range filters {
			opts := []jetstream.StreamPurgeOpt{jetstream.WithPurgeSequence(floor + 1)}
			if f != "" {
				opts = append(opts, jetstream.WithPurgeSubject(f))
			}
			n, err := purgeCount(ctx, s, opts...)
			if err != nil {
				return purged, fmt.Errorf("stream %s: purging what consumer %s acknowledged (up to sequence %d): %w", name, ci.Name, floor, err)
			}
			purged += n
		}
	}
	if err := l.Err(); err != nil {
		return purged, fmt.Errorf("stream %s: listing consumers: %w", name, err)
	}
	return purged, nil
}

// purgeCount purges and returns how many messages went, from the stream's
// message count before and after (the client's Purge does not return it).
func purgeCount(ctx context.Context, s jetstream.Stream, opts ...jetstream.StreamPurgeOpt) (uint64, error) {
	before, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	if err := s.Purge(ctx, opts...); err != nil {
		return 0, err
	}
	after, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	if after.State.Msgs > before.State.Msgs {
		return 0, nil
	}
	return before.State.Msgs - after.State.Msgs, nil
}
