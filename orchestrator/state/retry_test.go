package state

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus/bustest"
)

// flaky is a real bucket whose next calls fail the way a cluster in the
// middle of a leader election does: lost answers the write behind them
// was stored for (lostAnswers), or no answer at all (noAnswer).
type flaky struct {
	jetstream.KeyValue
	lostAnswers, noAnswer int
}

func (f *flaky) fail() error {
	if f.noAnswer > 0 {
		f.noAnswer--
		return nats.ErrNoResponders
	}
	return nil
}

func (f *flaky) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.KeyValue.Get(ctx, key)
}

func (f *flaky) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	if err := f.fail(); err != nil {
		return 0, err
	}
	rev, err := f.KeyValue.Update(ctx, key, value, last)
	if err == nil && f.lostAnswers > 0 {
		f.lostAnswers--
		return 0, context.DeadlineExceeded
	}
	return rev, err
}

func (f *flaky) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if err := f.fail(); err != nil {
		return 0, err
	}
	rev, err := f.KeyValue.Create(ctx, key, value, opts...)
	if err == nil && f.lostAnswers > 0 {
		f.lostAnswers--
		return 0, context.DeadlineExceeded
	}
	return rev, err
}

func TestRetryKVOverTransientFailures(t *testing.T) {
	res := bustest.Start(t).Provision(t)
	ctx := context.Background()
	f := &flaky{KeyValue: res.Runs}
	kv := retryKV{f}

	// A create whose answer was lost is found stored, not created twice.
	f.lostAnswers = 1
	rev, err := kv.Create(ctx, "k", []byte("one"))
	if err != nil || rev == 0 {
		t.Fatalf("create with a lost answer: rev %d, %v", rev, err)
	}
	// An update whose answer was lost, after the server did not answer at
	// all twice, is its own write.
	f.noAnswer, f.lostAnswers = 2, 1
	rev2, err := kv.Update(ctx, "k", []byte("two"), rev)
	if err != nil || rev2 != rev+1 {
		t.Fatalf("update with a lost answer: rev %d (want %d), %v", rev2, rev+1, err)
	}
	if e, _ := res.Runs.Get(ctx, "k"); string(e.Value()) != "two" || e.Revision() != rev2 {
		t.Errorf("stored %q at %d", e.Value(), e.Revision())
	}
	// Another writer in between is a conflict, as without the retries.
	f.lostAnswers = 1
	if _, err := kv.Update(ctx, "k", []byte("three"), rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Runs.Put(ctx, "k", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, "k", []byte("four"), rev2+1); !IsConflict(err) {
		t.Errorf("an update over another writer's value: %v, want a conflict", err)
	}
	// A read retried past no answers.
	f.noAnswer = 3
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "other" {
		t.Errorf("get after no answers: %v", err)
	}
	// ctx ending is not retried.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	f.noAnswer = 1
	if _, err := kv.Get(cctx, "k"); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("get with an ended ctx: %v, want the first error", err)
	}
}
