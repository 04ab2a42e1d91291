package state

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// A run's header and a conversation's state are the only keys of one token
// in their buckets (the others are <id>.<suffix>), so a metadata-only watch
// of "*" lists runs and conversations without reading a value.

// RunSummary is one line of a list of runs.
type RunSummary struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
	Steps     int    `json:"steps"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	Skipped   int    `json:"skipped"`
	// Agents are the agents the run's steps call, sorted, each once.
	Agents []string `json:"agents,omitempty"`
	// Waiting are the steps waiting for a person: step -> what for.
	Waiting    map[string]string `json:"waiting,omitempty"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	FinishedAt time.Time         `json:"finished_at,omitzero"`
	// Origin is the run and step a forked run was forked from.
	Origin *schemas.RunOrigin `json:"origin,omitempty"`
}

// ConversationSummary is one line of a list of conversations.
type ConversationSummary struct {
	ID          string `json:"id"`
	Turns       int    `json:"turns"`
	Slots       int    `json:"slots"`
	LastMessage string `json:"last_message,omitempty"` // the last user message, clipped
	// State is how its latest turn ended (schemas.ChatCompleted, ...), or
	// ConversationRunning while that turn runs.
	State string `json:"state,omitempty"`
	// Agents are the agents its latest turn called, sorted, each once.
	Agents    []string  `json:"agents,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ConversationRunning is a ConversationSummary's State while its latest
// turn runs.
const ConversationRunning = "running"

// CompletedSteps counts the steps of sd that completed as far as h knows:
// those of the waves over (every wave, once the run has ended). A header of
// the previous layout counts from its lists.
func (h *RunHeader) CompletedSteps(sd *RunSpec) int {
	if len(sd.Waves) == 0 || h.Wave < 0 {
		return 0
	}
	if !h.Legacy() {
		return h.Completed
	}
	if h.Done() {
		return len(sd.Spec.Steps) - len(h.LegacyFailed) - len(h.LegacySkipped)
	}
	n := 0
	for w, ids := range sd.Waves {
		for _, id := range ids {
			ended := w < h.Wave || (w == h.Wave && slices.Contains(h.LegacyWaveEnded, id))
			if ended && h.LegacyFailed[id] == "" && h.LegacySkipped[id] == "" {
				n++
			}
		}
	}
	return n
}

// RecentRuns returns the runs most recently written first, at most limit
// of them (all when limit <= 0), and how many runs the bucket holds.
func (s *Store) RecentRuns(ctx context.Context, limit int) ([]RunSummary, int, error) {
	ids, total, err := recent(ctx, s.runs, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]RunSummary, 0, len(ids))
	for _, id := range ids {
		var (
			h  RunHeader
			sd RunSpec
		)
		if _, err := s.getJSON(ctx, id, &h); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue // deleted since the listing
			}
			return nil, 0, err
		}
		if _, err := s.getJSON(ctx, specKey(id), &sd); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, 0, fmt.Errorf("run %q: %w", id, err)
		}
		sd.Init()
		out = append(out, RunSummary{ID: id, Name: h.Name, Status: h.Status, Error: h.Error, Steps: len(sd.Spec.Steps),
			Completed: h.CompletedSteps(&sd), Failed: h.FailedCount(), Skipped: h.SkippedCount(),
			Agents: stepAgents(sd.Spec.Steps), Waiting: h.Waiting, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt, FinishedAt: h.FinishedAt,
			Origin: sd.Origin})
	}
	return out, total, nil
}

// stepAgents lists the agents steps call, sorted, each once.
func stepAgents(steps []pipelinespec.PipelineStep) []string {
	var out []string
	for _, s := range steps {
		if s.Agent != "" {
			out = append(out, s.Agent)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// historyAgents lists the agents a history's entries name, sorted, each
// once.
func historyAgents(history []schemas.HistoryEntry) []string {
	var out []string
	for _, e := range history {
		if e.Agent != "" {
			out = append(out, e.Agent)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RecentConversations returns the conversations most recently written
// first, at most limit of them (all when limit <= 0), and how many the
// bucket holds.
func (s *Store) RecentConversations(ctx context.Context, limit int) ([]ConversationSummary, int, error) {
	ids, total, err := recent(ctx, s.conversations, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]ConversationSummary, 0, len(ids))
	for _, id := range ids {
		st, err := s.ConversationState(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		c := ConversationSummary{ID: id, Turns: st.Turns, Slots: len(st.Slots), CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt}
		history := st.History // a conversation of the previous layout
		raw, err := s.Turn(ctx, id, st.Turns)
		switch {
		case err == nil:
			var t struct {
				History  []schemas.HistoryEntry `json:"history"`
				Response struct {
					State string `json:"state"`
				} `json:"response"`
			}
			if json.Unmarshal(raw, &t) == nil {
				history, c.State = t.History, t.Response.State
				c.Agents = historyAgents(t.History)
			}
		case errors.Is(err, ErrNotFound) && st.Turns > 0: // counted when it starts, stored when it ends
			c.State = ConversationRunning
		}
		for i := len(history) - 1; i >= 0; i-- {
			if history[i].Kind == "user" {
				c.LastMessage = schemas.Clip(history[i].Text, 80)
				break
			}
		}
		out = append(out, c)
	}
	return out, total, nil
}

// recent lists the one-token keys of kv, most recently written first: at
// most limit (all when limit <= 0), and how many there are.
func recent(ctx context.Context, kv jetstream.KeyValue, limit int) ([]string, int, error) {
	w, err := kv.Watch(ctx, "*", jetstream.MetaOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return nil, 0, fmt.Errorf("listing bucket %s: %w", kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	type key struct {
		id  string
		rev uint64
	}
	var keys []key
	for {
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("listing bucket %s: %w", kv.Bucket(), ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, 0, fmt.Errorf("listing bucket %s: the watch ended early", kv.Bucket())
			}
			if e != nil {
				keys = append(keys, key{e.Key(), e.Revision()})
				continue
			}
			slices.SortFunc(keys, func(a, b key) int { return cmp.Compare(b.rev, a.rev) })
			total := len(keys)
			if limit > 0 && len(keys) > limit {
				keys = keys[:limit]
			}
			ids := make([]string, len(keys))
			for i, k := range keys {
				ids[i] = k.id
			}
			return ids, total, nil
		}
	}
}
