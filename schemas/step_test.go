package schemas_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

// memSteps is a StepStore in memory, for the numbering and replay logic;
// the runtime's store (a KV bucket) is tested in package agents.
type memSteps struct {
	mu   sync.Mutex
	recs map[string][]byte
	keys []string // in the order recorded
}

func (m *memSteps) Recorded(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.recs[key]
	return b, ok, nil
}

func (m *memSteps) Record(_ context.Context, key string, value []byte) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.recs[key]; ok {
		return b, nil
	}
	m.recs[key] = value
	m.keys = append(m.keys, key)
	return value, nil
}

// run is one delivery of a task that takes a step "model" three times,
// a step "tool" with a nested "model" inside, and fails once told to
// after the first two model steps.
func run(ctx context.Context, ran map[string]int, failAfter int) ([]int, error) {
	var got []int
	for i := range 3 {
		if i == failAfter {
			return got, errors.New("crash")
		}
		v, err := schemas.Step(ctx, "model", func(ctx context.Context, key string) (int, error) {
			ran[key]++
			return 10 * (i + 1), nil
		})
		if err != nil {
			return got, err
		}
		got = append(got, v)
	}
	v, err := schemas.Step(ctx, "tool", func(ctx context.Context, key string) (int, error) {
		ran[key]++
		inner, err := schemas.Step(ctx, "model", func(_ context.Context, key string) (int, error) {
			ran[key]++
			return 7, nil
		})
		return inner + 1, err
	})
	return append(got, v), err
}

func TestStepRecordsOnceAndReplaysInOrder(t *testing.T) {
	store := &memSteps{recs: map[string][]byte{}}
	ran := map[string]int{}
	ctx := schemas.WithSteps(context.Background(), "task1", store)
	if _, err := run(ctx, ran, 2); err == nil {
		t.Fatal("the first delivery should crash after two steps")
	}
	// The redelivery: a new scope on the same store, as the runtime makes.
	ctx = schemas.WithSteps(context.Background(), "task1", store)
	got, err := run(ctx, ran, -1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{10, 20, 30, 8}; !slices.Equal(got, want) {
		t.Errorf("results %v; want %v", got, want)
	}
	wantKeys := []string{"task1.model.0", "task1.model.1", "task1.model.2", "task1.tool.0.model.0", "task1.tool.0"}
	if !slices.Equal(store.keys, wantKeys) {
		t.Errorf("recorded keys %v; want %v", store.keys, wantKeys)
	}
	for _, k := range wantKeys {
		if ran[k] != 1 {
			t.Errorf("step %s ran %d times over two deliveries; want once", k, ran[k])
		}
	}
	// A third delivery runs nothing.
	ctx = schemas.WithSteps(context.Background(), "task1", store)
	before := len(store.keys)
	if _, err := run(ctx, ran, -1); err != nil || len(store.keys) != before {
		t.Fatalf("third delivery: err %v, %d new records", err, len(store.keys)-before)
	}
	for k, n := range ran {
		if n != 1 {
			t.Errorf("step %s ran %d times over three deliveries", k, n)
		}
	}
}

func TestStepFailureRecordsNothing(t *testing.T) {
	store := &memSteps{recs: map[string][]byte{}}
	ctx := schemas.WithSteps(context.Background(), "t", store)
	calls := 0
	step := func(ctx context.Context, key string) (string, error) {
		calls++
		if calls == 1 {
			return "", errors.New("model down")
		}
		return "ok", nil
	}
	if _, err := schemas.Step(ctx, "model", step); err == nil {
		t.Fatal("want the step's error")
	}
	ctx = schemas.WithSteps(context.Background(), "t", store)
	if v, err := schemas.Step(ctx, "model", step); err != nil || v != "ok" || calls != 2 {
		t.Fatalf("retry: %q, %v after %d calls; want ok after 2", v, err, calls)
	}
}

// A record another delivery made first is the step's result.
func TestStepKeepsTheFirstRecord(t *testing.T) {
	store := &memSteps{recs: map[string][]byte{"t.pick.0": []byte(`"first"`)}}
	// A store that says nothing is recorded (the runtime's on a first
	// delivery) and finds the record when it writes.
	ctx := schemas.WithSteps(context.Background(), "t", blindStore{store})
	v, err := schemas.Step(ctx, "pick", func(context.Context, string) (string, error) { return "second", nil })
	if err != nil || v != "first" {
		t.Fatalf("got %q, %v; want the first record", v, err)
	}
}

type blindStore struct{ *memSteps }

func (blindStore) Recorded(context.Context, string) ([]byte, bool, error) { return nil, false, nil }

func TestStepNames(t *testing.T) {
	ctx := schemas.WithSteps(context.Background(), "t", &memSteps{recs: map[string][]byte{}})
	for _, name := range []string{"", "a.b", "a b", "x*", string(make([]byte, 65))} {
		_, err := schemas.Step(ctx, name, func(context.Context, string) (int, error) { return 1, nil })
		if !errors.Is(err, schemas.ErrStepName) {
			t.Errorf("Step(%q): %v; want ErrStepName", name, err)
		}
	}
	for _, name := range []string{"model", "tool-call_2", "A"} {
		if err := schemas.ValidateStepName(name); err != nil {
			t.Errorf("ValidateStepName(%q): %v", name, err)
		}
	}
}

// Outside an agent runtime there is no journal: the step runs each time.
func TestStepWithoutJournal(t *testing.T) {
	n := 0
	for range 2 {
		_, err := schemas.Step(context.Background(), "x", func(_ context.Context, key string) (int, error) {
			if key != "" {
				t.Errorf("key %q outside a journal; want empty", key)
			}
			n++
			return n, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != 2 {
		t.Errorf("ran %d times; want 2", n)
	}
}

// An agent charges a card in a step, passing the step's key as the
// payment's idempotency key. The task's first delivery dies after the
// charge; the second finds the charge recorded and does not charge again.
func ExampleStep() {
	journal := &memSteps{recs: map[string][]byte{}} // the runtime's is the mesh_steps bucket
	charges := 0
	charge := func(ctx context.Context) (string, error) {
		return schemas.Step(ctx, "charge", func(_ context.Context, key string) (string, error) {
			charges++
			return "receipt for " + key, nil // a payment API would get key as its idempotency key
		})
	}
	for delivery := 1; delivery <= 2; delivery++ {
		ctx := schemas.WithSteps(context.Background(), "task-42", journal)
		receipt, _ := charge(ctx)
		fmt.Printf("delivery %d: %s (charged %d times)\n", delivery, receipt, charges)
	}
	// Output:
	// delivery 1: receipt for task-42.charge.0 (charged 1 times)
	// delivery 2: receipt for task-42.charge.0 (charged 1 times)
}
