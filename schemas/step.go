package schemas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Steps: the journal of a task's steps. A step is a named piece of an
// agent's work whose result is recorded in the mesh the first time it
// runs; when the task is delivered again (its agent died, the task was
// retried) the step returns the recorded result and its function does not
// run. The agent runtime puts a journal on the context Execute gets
// (WithSteps); model calls through package llm, agent-to-agent calls and
// object-store writes made under that context are steps of their own.
// docs/durability.md says what is recorded where.

// MaxStepNameLen bounds a step's name.
const MaxStepNameLen = 64

// ErrStepName reports a step name that cannot be part of a journal key.
var ErrStepName = errors.New("invalid step name")

// StepStore keeps the recorded results of one task's steps, by key (see
// StepKey). The agent runtime's store is a JetStream KV bucket.
type StepStore interface {
	// Recorded returns the result recorded under key, if any.
	Recorded(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Record stores value under key unless a result is recorded there
	// already (another delivery of the task got there first); it returns
	// the result recorded under key then, value or the earlier one.
	Record(ctx context.Context, key string, value []byte) ([]byte, error)
}

// stepScope numbers the steps taken under one prefix: the task's id at the
// top, a step's key inside that step's function. Each name has its own
// sequence, so a loop calling Step("model") five times records five
// entries, and a redelivery taking the same steps in the same order finds
// them.
type stepScope struct {
	store  StepStore
	prefix string

	mu  sync.Mutex
	seq map[string]int
}

type stepScopeKey struct{}

// WithSteps returns ctx journaling the steps of task taskID in store: the
// agent runtime calls it for each task it runs.
func WithSteps(ctx context.Context, taskID string, store StepStore) context.Context {
	return context.WithValue(ctx, stepScopeKey{}, &stepScope{store: store, prefix: taskID, seq: map[string]int{}})
}

// Journaled reports whether steps taken under ctx are recorded.
func Journaled(ctx context.Context) bool {
	s, _ := ctx.Value(stepScopeKey{}).(*stepScope)
	return s != nil
}

// StepKey is the journal key of the step: the scope's prefix (the task id,
// then the enclosing steps' names and numbers), the step's name and its
// number among the steps of that name in the scope, from 0:
// <taskid>.<name>.<n>[.<name>.<n>...].
func StepKey(prefix, name string, n int) string {
	return prefix + "." + name + "." + strconv.Itoa(n)
}

// ValidateStepName checks that name can be a token of a journal key: 1 to
// MaxStepNameLen letters, digits, '-' or '_'.
func ValidateStepName(name string) error {
	if name == "" || len(name) > MaxStepNameLen {
		return fmt.Errorf("%w: %q: use 1 to %d letters, digits, '-' or '_'", ErrStepName, Clip(name, 80), MaxStepNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			continue
		}
		return fmt.Errorf("%w: %q has %q at byte %d: use only letters, digits, '-' or '_'", ErrStepName, Clip(name, 80), c, i)
	}
	return nil
}

// next returns the key of the next step called name in s.
func (s *stepScope) next(name string) string {
	s.mu.Lock()
	n := s.seq[name]
	s.seq[name] = n + 1
	s.mu.Unlock()
	return StepKey(s.prefix, name, n)
}

// Step runs fn as the step called name of the task ctx belongs to: the
// first time fn runs and its result, encoded as JSON, is recorded; when the
// task runs again (a redelivery) the recorded result is decoded and
// returned and fn is not called. fn gets the step's key, deterministic and
// the same on every delivery: pass it to an effect as its idempotency key,
// since an effect whose step crashed before its record was written happens
// again. A failed fn records nothing, so the step runs again next time.
// Steps taken inside fn, under the ctx it is given, are recorded under the
// step's key.
//
// A task's steps must be taken in the same order on every delivery: steps
// of one name are numbered in the order they are called. Under a context
// with no journal (outside an agent runtime) fn simply runs, with key "".
func Step[T any](ctx context.Context, name string, fn func(ctx context.Context, key string) (T, error)) (T, error) {
	var zero T
	if err := ValidateStepName(name); err != nil {
		return zero, err
	}
	s, _ := ctx.Value(stepScopeKey{}).(*stepScope)
	if s == nil {
		return fn(ctx, "")
	}
	key := s.next(name)
	if b, ok, err := s.store.Recorded(ctx, key); err != nil {
		return zero, fmt.Errorf("step %s: reading its record: %w", key, err)
	} else if ok {
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return zero, fmt.Errorf("step %s: its record does not decode: %w", key, err)
		}
		return v, nil
	}
	inner := context.WithValue(ctx, stepScopeKey{}, &stepScope{store: s.store, prefix: key, seq: map[string]int{}})
	v, err := fn(inner, key)
	if err != nil {
		return v, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v, fmt.Errorf("step %s: its result cannot be recorded: %w", key, err)
	}
	got, err := s.store.Record(ctx, key, b)
	if err != nil {
		return v, fmt.Errorf("step %s: %w", key, err)
	}
	if string(got) != string(b) { // another delivery recorded it first: its result stands
		var first T
		if err := json.Unmarshal(got, &first); err != nil {
			return v, fmt.Errorf("step %s: its record does not decode: %w", key, err)
		}
		return first, nil
	}
	return v, nil
}

// Step is the package's Step for an agent: fn's result is recorded as
// JSON and returned as it was recorded. See Step.
func (c *ExecutionContext) Step(ctx context.Context, name string, fn func(ctx context.Context, key string) (any, error)) (json.RawMessage, error) {
	return Step(ctx, name, func(ctx context.Context, key string) (json.RawMessage, error) {
		v, err := fn(ctx, key)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	})
}
