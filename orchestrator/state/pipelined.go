package state

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
)

// Pipelined writes. A KV put is a JetStream publish on $KV.<bucket>.<key>
// (bus.Names.KVPut), so several writes can go out back to back on one
// connection and their acknowledgements be awaited together: one round
// trip instead of one per key. The server stores them in the order they
// were sent. A write with a revision is a compare-and-set; revision 0 is a
// create (the first writer decides).

// WithPipelining lets the store pipeline writes through js (its publish
// timeouts bound an unacknowledged write). Without it Pipelined reports
// false and callers write key by key.
func WithPipelining(js jetstream.JetStream) Option { return func(s *Store) { s.async = js } }

// Pipelined reports whether the store can pipeline writes.
func (s *Store) Pipelined() bool { return s.async != nil && s.runs != nil }

// Write is one pipelined write under way.
type Write struct{ f jetstream.PubAckFuture }

// Wait waits for the write and returns the key's new revision. A lost
// compare-and-set (or a create of a key that exists) reports true for
// IsWrongLast.
func (w Write) Wait(ctx context.Context) (uint64, error) {
	select {
	case ack := <-w.f.Ok():
		return ack.Sequence, nil
	case err := <-w.f.Err():
		return 0, err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// IsWrongLast reports a pipelined write whose revision was not the key's:
// code 10071, or 10164 from a replicated (R3) bucket.
func IsWrongLast(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func (s *Store) putAsync(key string, value []byte, last uint64) (Write, error) {
	m := nats.NewMsg(bus.Names{}.KVPut(s.runs.Bucket(), key))
	m.Data = value
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
	f, err := s.async.PublishMsgAsync(m)
	return Write{f}, err
}

// RecordStepAsync sends the record of a step's end with create: it stands
// unless another writer's record is there first.
func (s *Store) RecordStepAsync(runID string, rec *StepState) (Write, error) {
	v, err := s.Encode(rec, nil)
	if err != nil {
		return Write{}, err
	}
	return s.putAsync(stepKey(runID, rec.ID), v, 0)
}

// PutHeaderAsync sends h with compare-and-set on rev, stamped now.
func (s *Store) PutHeaderAsync(h *RunHeader, rev uint64, now time.Time) (Write, error) {
	h.UpdatedAt = now
	v, err := json.Marshal(h)
	if err != nil {
		return Write{}, err
	}
	return s.putAsync(h.ID, v, rev)
}

// PutRunStateAsync sends a run's encoded state (see ApplyRunState) with
// compare-and-set on rev.
func (s *Store) PutRunStateAsync(runID string, raw []byte, rev uint64) (Write, error) {
	return s.putAsync(stateKey(runID), raw, rev)
}

// PutHeader writes h with compare-and-set on rev, stamped now, and returns
// the new revision; one attempt (see UpdateHeader for the loop).
func (s *Store) PutHeader(ctx context.Context, h *RunHeader, rev uint64) (uint64, error) {
	h.UpdatedAt = time.Now().UTC()
	v, err := json.Marshal(h)
	if err != nil {
		return 0, err
	}
	return s.runs.Update(ctx, h.ID, v, rev)
}

// Spec reads a run's spec, ready to use.
func (s *Store) Spec(ctx context.Context, runID string) (*RunSpec, error) {
	sd := &RunSpec{}
	if _, err := s.getOnceJSON(ctx, specKey(runID), sd); err != nil {
		return nil, err
	}
	sd.compact()
	return sd.Init(), nil
}

// Header reads a run's header and its revision.
func (s *Store) Header(ctx context.Context, runID string) (*RunHeader, uint64, error) {
	h := &RunHeader{}
	rev, err := s.getJSON(ctx, runID, h)
	if err != nil {
		return nil, 0, err
	}
	return h, rev, nil
}

// WatchRunSpecs watches the spec keys, written once per run when it
// starts, without their values: the runs there are (RunOfSpecKey names
// each key's run). Headers, written at every step, are not watched.
func (s *Store) WatchRunSpecs(ctx context.Context) (jetstream.KeyWatcher, error) {
	return s.runs.Watch(ctx, specKey("*"), jetstream.MetaOnly())
}

// RunsBucket is the runs bucket, for reading its history; write it only
// through the Store.
func (s *Store) RunsBucket() jetstream.KeyValue { return s.runs }
