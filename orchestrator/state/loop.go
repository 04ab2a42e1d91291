package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// A loop step (for_each, repeat) keeps its progress beside the step's
// record, so one item's end writes two small values whatever the number of
// items:
//
//	<run>.loop.<step>        LoopProgress: which items started and ended
//	                         (compare-and-set; its size grows with the
//	                         parallelism, not the items)
//	<run>.loop.<step>.items  LoopItems: the items and the inputs they share
//	                         (written once, when the loop starts)
//	<run>.loop.<step>.<i>    how item i ended: a StepState (written once,
//	                         with create: the first writer decides)
//
// The step's own record (<run>.step.<step>) is written once every item
// ended, with the items' outputs merged; until then the header knows the
// step as running, like any other.

func loopKey(run, step string) string      { return run + ".loop." + step }
func loopItemsKey(run, step string) string { return run + ".loop." + step + ".items" }
func loopItemKey(run, step string, i int) string {
	return run + ".loop." + step + "." + strconv.Itoa(i)
}

// LoopItems are the items of a loop step and the inputs every item's task
// shares. The items are one data type, so only their values are kept.
type LoopItems struct {
	Input    string                        `json:"input"` // the agent input an item is given as
	DataType string                        `json:"data_type,omitempty"`
	Hint     string                        `json:"content_type_hint,omitempty"`
	Values   []json.RawMessage             `json:"values,omitempty"`
	Base     map[string]schemas.TypedValue `json:"base,omitempty"` // the other inputs
}

// Item returns item i as a typed value.
func (l *LoopItems) Item(i int, source string) schemas.TypedValue {
	return schemas.TypedValue{DataType: l.DataType, ContentTypeHint: l.Hint, Value: l.Values[i], Source: source}
}

// LoopProgress is how far a loop step got. Items [0, Low) ended, items in
// Ended ended too, items [Low, Next) not in Ended run; Stop, once set, says
// why no more items start.
type LoopProgress struct {
	N         int       `json:"n"`
	Parallel  int       `json:"parallel"`
	Next      int       `json:"next"`
	Low       int       `json:"low"`
	Ended     []int     `json:"ended,omitempty"`
	Stop      string    `json:"stop,omitempty"`
	Code      string    `json:"code,omitempty"` // the error code of a Stop that fails the step
	UpdatedAt time.Time `json:"updated_at"`
}

// HasEnded reports whether item i ended.
func (p *LoopProgress) HasEnded(i int) bool { return i < p.Low || slices.Contains(p.Ended, i) }

// End marks item i ended and reports false when it had (or never started).
func (p *LoopProgress) End(i int) bool {
	if i < 0 || i >= p.Next || p.HasEnded(i) {
		return false
	}
	p.Ended = append(p.Ended, i)
	slices.Sort(p.Ended)
	for len(p.Ended) > 0 && p.Ended[0] == p.Low {
		p.Ended = p.Ended[1:]
		p.Low++
	}
	if len(p.Ended) == 0 {
		p.Ended = nil
	}
	return true
}

// Running returns the items that started and have not ended.
func (p *LoopProgress) Running() []int {
	var out []int
	for i := p.Low; i < p.Next; i++ {
		if !slices.Contains(p.Ended, i) {
			out = append(out, i)
		}
	}
	return out
}

// Fill starts items while fewer than Parallel run and none stopped the
// loop, and returns the items it started.
func (p *LoopProgress) Fill() []int {
	var out []int
	for p.Stop == "" && p.Next < p.N && p.Next-p.Low-len(p.Ended) < p.Parallel {
		out = append(out, p.Next)
		p.Next++
	}
	return out
}

// Over reports whether every started item ended and no more will start.
func (p *LoopProgress) Over() bool {
	return p.Low == p.Next && (p.Stop != "" || p.Next >= p.N)
}

// Describe says how far the loop got: "12 of 1000 ended, 8 running".
func (p *LoopProgress) Describe() string {
	out := fmt.Sprintf("%d of %d ended, %d running", p.Low+len(p.Ended), p.N, len(p.Running()))
	if p.Stop != "" {
		out += "; " + p.Stop
	}
	return out
}

// StartLoop stores a loop's items and progress unless they are stored
// (a loop started again by the sweep, or by another replica), and returns
// the stored ones with the progress's revision.
func (s *Store) StartLoop(ctx context.Context, run, step string, items *LoopItems, p *LoopProgress) (*LoopItems, *LoopProgress, uint64, error) {
	b, err := s.Encode(items, nil)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("the items of step %q: %w", step, err)
	}
	if _, err := s.runs.Create(ctx, loopItemsKey(run, step), b); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, nil, 0, fmt.Errorf("starting loop %q of run %q: %w", step, run, err)
		}
		if items, err = s.LoopItems(ctx, run, step); err != nil {
			return nil, nil, 0, err
		}
	}
	pb, err := json.Marshal(p)
	if err != nil {
		return nil, nil, 0, err
	}
	rev, err := s.runs.Create(ctx, loopKey(run, step), pb)
	if errors.Is(err, jetstream.ErrKeyExists) {
		p, rev, err = s.LoopProgress(ctx, run, step)
	} else if err != nil {
		err = fmt.Errorf("starting loop %q of run %q: %w", step, run, err)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	return items, p, rev, nil
}

// LoopItems reads a loop step's items; ErrNotFound before it started.
func (s *Store) LoopItems(ctx context.Context, run, step string) (*LoopItems, error) {
	var l LoopItems
	if _, err := s.getOnceJSON(ctx, loopItemsKey(run, step), &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// LoopProgress reads a loop step's progress and its revision; ErrNotFound
// before it started.
func (s *Store) LoopProgress(ctx context.Context, run, step string) (*LoopProgress, uint64, error) {
	var p LoopProgress
	rev, err := s.getJSON(ctx, loopKey(run, step), &p)
	if err != nil {
		return nil, 0, err
	}
	return &p, rev, nil
}

// UpdateLoop applies fn to a loop's progress with compare-and-set,
// starting from p at rev when the caller has them. fn may run more than
// once, on a fresh copy each time; ErrUnchanged skips the write and
// returns the stored progress with ErrUnchanged.
func (s *Store) UpdateLoop(ctx context.Context, run, step string, p *LoopProgress, rev uint64, fn func(*LoopProgress) error) (*LoopProgress, uint64, error) {
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		given := p != nil
		if p == nil {
			var err error
			if p, rev, err = s.LoopProgress(ctx, run, step); err != nil {
				return nil, 0, err
			}
		}
		next := *p
		next.Ended = slices.Clone(p.Ended)
		if err := fn(&next); err != nil {
			if errors.Is(err, ErrUnchanged) && given {
				p = nil // the caller's copy may be behind: decide on the stored one
				continue
			}
			return p, rev, err
		}
		next.UpdatedAt = time.Now().UTC()
		b, err := json.Marshal(&next)
		if err != nil {
			return nil, 0, err
		}
		nrev, err := s.runs.Update(ctx, loopKey(run, step), b, rev)
		if err == nil {
			return &next, nrev, nil
		}
		if !IsConflict(err) {
			return nil, 0, fmt.Errorf("writing loop %q of run %q: %w", step, run, err)
		}
		p = nil
		if err := Backoff(ctx, attempt); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("%w: loop %q of run %q after %d attempts", ErrConflict, step, run, maxUpdateAttempts)
}

// RecordItem writes how item i of a loop step ended unless that is
// written, and returns the record that stands (the first one written).
func (s *Store) RecordItem(ctx context.Context, run, step string, i int, rec *StepState) (*StepState, error) {
	b, err := s.Encode(rec, nil)
	if errors.Is(err, ErrTooLarge) {
		small := *rec
		small.Outputs = nil
		small.Status, small.Code = schemas.StepFailed, schemas.CodeTooLarge
		small.Error = fmt.Sprintf("item %d: the outputs are too large to keep: %v", i, err)
		rec = &small
		b, err = json.Marshal(rec)
	}
	if err != nil {
		return nil, err
	}
	if _, err = s.runs.Create(ctx, loopItemKey(run, step, i), b); err == nil {
		return rec, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("recording item %d of step %q of run %q: %w", i, step, run, err)
	}
	return s.ItemRecord(ctx, run, step, i)
}

// ItemRecord reads how item i of a loop step ended; ErrNotFound while it runs.
func (s *Store) ItemRecord(ctx context.Context, run, step string, i int) (*StepState, error) {
	var rec StepState
	if _, err := s.getOnceJSON(ctx, loopItemKey(run, step, i), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}
