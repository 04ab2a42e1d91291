package agents

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// stepsBucket is the runtime's handle on the step journal's bucket,
// looked up (or made, on a mesh provisioned before it) the first time a
// task records a step: a task that takes no steps costs nothing.
type stepsBucket struct {
	mu sync.Mutex
	kv jetstream.KeyValue
}

// get returns the bucket, looking it up once it is found.
func (b *stepsBucket) get(ctx context.Context, js jetstream.JetStream, n bus.Names) (jetstream.KeyValue, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kv != nil {
		return b.kv, nil
	}
	kv, err := bus.EnsureSteps(ctx, js, n)
	if err != nil {
		return nil, Retryable(fmt.Errorf("the step journal: %w", err))
	}
	b.kv = kv
	return kv, nil
}

// journal is the schemas.StepStore of one delivery of a task: its steps'
// results in the steps bucket, one key each (schemas.StepKey), written
// once.
type journal struct {
	r      *Runtime
	taskID string
	// first: the task's first delivery, which finds nothing recorded, so
	// Recorded does not look; a step then costs one write. Should
	// another delivery have recorded the step meanwhile, Record returns
	// that record.
	first bool
}

var _ schemas.StepStore = (*journal)(nil)

func (j *journal) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	return j.r.steps.get(ctx, j.r.js, j.r.cfg.names)
}

// Recorded implements schemas.StepStore.
func (j *journal) Recorded(ctx context.Context, key string) ([]byte, bool, error) {
	if j.first {
		return nil, false, nil
	}
	kv, err := j.bucket(ctx)
	if err != nil {
		return nil, false, err
	}
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, Retryable(fmt.Errorf("reading %s in %s: %w", key, kv.Bucket(), err))
	}
	return e.Value(), true, nil
}

// Record implements schemas.StepStore: a create, which fails when the key
// is there already; the value there is then returned. A result over
// bus.MaxStepValue is refused with code step_too_large.
func (j *journal) Record(ctx context.Context, key string, value []byte) ([]byte, error) {
	if len(value) > bus.MaxStepValue {
		return nil, &schemas.ResultError{Code: schemas.CodeStepTooLarge, Message: fmt.Sprintf(
			"%s: task %s: the result of step %s is %d bytes, over the step journal's limit of %d: return less from the step (put large content in files and return their ids)",
			j.r.contract.Name, j.taskID, key, len(value), bus.MaxStepValue)}
	}
	kv, err := j.bucket(ctx)
	if err != nil {
		return nil, err
	}
	_, err = kv.Create(ctx, key, value)
	if errors.Is(err, jetstream.ErrKeyExists) {
		e, gerr := kv.Get(ctx, key)
		if gerr != nil {
			return nil, Retryable(fmt.Errorf("reading %s in %s: %w", key, kv.Bucket(), gerr))
		}
		return e.Value(), nil
	}
	if err != nil {
		return nil, Retryable(fmt.Errorf("recording %s in %s: %w", key, kv.Bucket(), err))
	}
	return value, nil
}
