package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// A run is kept in the runs bucket as several keys, none of which grows with
// the run's width, length or history, so the work done for one result is the
// same in a 10,000-step run as in a 3-step one:
//
//	<run>              the header: status, the wave in progress and how many
//	                   of its steps ended, counts of the waves over, the
//	                   first few failures (compare-and-set, a few hundred bytes)
//	<run>.spec         the spec, the contracts it was validated against and its
//	                   waves (written once)
//	<run>.state        the run's slots, with the number of waves whose outputs
//	                   are routed into them: written once per wave that has
//	                   outputs to route (compare-and-set)
//	<run>.step.<step>  how one step ended: status, task id, timing, outputs
//	                   (written once, with create: the first writer decides);
//	                   a step skipped because a dependency failed or was
//	                   skipped has one too
//
// Applying one result writes the step's record and adds one to the header's
// count of ended steps (Ends). The write that brings the count to the wave's
// width reads the wave's records (the replica has most of them cached),
// routes their outputs into <run>.state in spec order, and starts the next
// wave in the same header update; so a header in wave w implies the records
// and the routed slots of every earlier wave. Store.Run assembles the keys
// into one RunState on read.
//
// The count can run ahead of the truth (a result settled twice, when its
// first settle died before its acknowledgement), never behind: every record
// is counted by whoever settles it, and a wave starts only once every record
// of the one before is found. Runs written by the previous layout (a header
// listing the wave's ended steps, and its failures and skips by step) are
// upgraded on their next update (see RunHeader.Legacy).

// RunState is one pipeline run as Store.Run assembles it from its keys
// in the runs bucket (see the keys above for the layout): the spec and the
// contracts it was validated against, the progress of every step, and the
// run's slots and history.
type RunState struct {
	ID        string                           `json:"id"`
	Name      string                           `json:"name,omitempty"`
	Status    string                           `json:"status"`
	Error     string                           `json:"error,omitempty"`
	Code      string                           `json:"code,omitempty"` // failed: the error code (schemas.Code*)
	Spec      pipelinespec.PipelineSpec        `json:"spec"`
	Contracts map[string]schemas.AgentContract `json:"contracts,omitempty"`
	Waves     [][]string                       `json:"waves,omitempty"`
	Wave      int                              `json:"wave"` // index of the wave in progress
	Steps     map[string]*StepState            `json:"steps"`
	// State holds the run's slots (seed and routed outputs), its history and
	// the task ids already applied.
	State      *schemas.ConversationState `json:"state"`
	CreatedAt  time.Time                  `json:"created_at"`
	UpdatedAt  time.Time                  `json:"updated_at"`
	FinishedAt time.Time                  `json:"finished_at,omitzero"`
	// Origin is the run and step this run was forked from (nil: it was
	// submitted).
	Origin *schemas.RunOrigin `json:"origin,omitempty"`
}

// StepState is the progress of one step of a run.
type StepState struct {
	ID           string                        `json:"id"`
	Agent        string                        `json:"agent"`
	Wave         int                           `json:"wave"`
	Status       string                        `json:"status"`
	Attempt      int                           `json:"attempt,omitempty"`
	TaskID       string                        `json:"taskid,omitempty"`
	Deadline     time.Time                     `json:"deadline,omitzero"`
	DispatchedAt time.Time                     `json:"dispatched_at,omitzero"`
	FinishedAt   time.Time                     `json:"finished_at,omitzero"`
	Summary      string                        `json:"summary,omitempty"`
	Error        string                        `json:"error,omitempty"`
	Code         string                        `json:"code,omitempty"`   // failed: the error code (schemas.Code*)
	Reason       string                        `json:"reason,omitempty"` // why it was skipped, or what it waits for
	Outputs      map[string]schemas.TypedValue `json:"outputs,omitempty"`
	Metrics      schemas.Metrics               `json:"metrics,omitzero"`
	// From is the run whose record of this step a fork kept: the step
	// sent no task in this run (see RunSpec.Kept).
	From string `json:"from,omitempty"`
}

// Terminal reports whether the step is completed, failed or skipped.
func (s *StepState) Terminal() bool {
	return s.Status == schemas.StepCompleted || s.Status == schemas.StepFailed || s.Status == schemas.StepSkipped
}

// Done reports whether the run has ended.
func (r *RunState) Done() bool {
	return schemas.RunEnded(r.Status)
}

func specKey(run string) string       { return run + ".spec" }
func stateKey(run string) string      { return run + ".state" }
func stepKey(run, step string) string { return run + ".step." + step }

// RunOfSpecKey returns the run a spec key (<run>.spec) names.
func RunOfSpecKey(key string) (string, bool) { return strings.CutSuffix(key, ".spec") }

// RunSpec is the immutable part of a run (<run>.spec). Call Init after
// decoding one.
type RunSpec struct {
	ID        string                           `json:"id"`
	Spec      pipelinespec.PipelineSpec        `json:"spec"`
	Contracts map[string]schemas.AgentContract `json:"contracts,omitempty"`
	Waves     [][]string                       `json:"waves,omitempty"`
	CreatedAt time.Time                        `json:"created_at"`
	// Submission is the id of the event that submitted the run: a
	// redelivery of it finds the run under way, another submission naming
	// the same run id is refused.
	Submission string `json:"submission,omitempty"`
	// TraceParent is the submission's W3C traceparent: the run's spans
	// belong to its trace (see telemetry.StepTraceParent).
	TraceParent string `json:"traceparent,omitempty"`
	// Parent is the run and step that started this run as a sub-pipeline;
	// its end ends that step.
	Parent *RunParent `json:"parent,omitempty"`
	// Nonce is the run's secret (schemas.NewRunNonce): its task ids are
	// tagged with it (pipelinespec.StepTaskID), so no one who has not read this
	// spec can compute them. Empty in runs stored before nonces: their
	// task ids are untagged.
	Nonce string `json:"nonce,omitempty"`
	// Owner is the client that submitted the run (the client name of
	// the subject it came on, which the server let only that client
	// publish to); "" when it came on the plain subject. Only the owner
	// (or a plain-subject sender: admin, the orchestrator, anyone on a
	// mesh without credentials) may resolve its steps.
	Owner string `json:"owner,omitempty"`
	// Origin is the run and step this run was forked from; Kept are the
	// steps that keep the original's records: when their wave starts, the
	// original's record is copied (its From set) and no task goes out.
	Origin *schemas.RunOrigin `json:"origin,omitempty"`
	Kept   []string           `json:"kept,omitempty"`

	// pos is where each step id is: its index in Spec.Steps and its wave
	// (-1 when in none). One map, not two: a replica holds the spec of
	// every run it serves, and a wide run has many steps.
	pos map[string]stepPos
}

type stepPos struct {
	index, wave int32
	kept        bool // a fork keeps the original's record (Kept)
}

// RunParent names the step of kind pipeline a child run runs for.
type RunParent struct {
	Run  string `json:"run"`
	Step string `json:"step"`
	// Item is the item of a for_each step the run runs for (nil for a
	// step of kind pipeline).
	Item *int `json:"item,omitempty"`
}

func (sd *RunSpec) Init() *RunSpec {
	sd.pos = make(map[string]stepPos, len(sd.Spec.Steps))
	for i, s := range sd.Spec.Steps {
		if _, dup := sd.pos[s.ID]; !dup {
			sd.pos[s.ID] = stepPos{index: int32(i), wave: -1}
		}
	}
	for w, wave := range sd.Waves {
		for _, id := range wave {
			if p, ok := sd.pos[id]; ok {
				p.wave = int32(w)
				sd.pos[id] = p
			}
		}
	}
	for _, id := range sd.Kept {
		if p, ok := sd.pos[id]; ok {
			p.kept = true
			sd.pos[id] = p
		}
	}
	return sd
}

// Keeps reports whether the run is a fork that keeps the original's
// record of step id (see Kept).
func (sd *RunSpec) Keeps(id string) bool { return sd.pos[id].kept }

// compact makes a spec just decoded from KV hold less: a replica keeps the
// spec of every run it serves for as long as it serves it. The decoder
// grows the steps slice by doubling and gives each step its own copy of
// its agent's and kind's names and each wave its own copy of the step ids;
// compact keeps the slice to size and one copy of each name. Only for a
// spec nobody else holds: it changes the spec in place.
func (sd *RunSpec) compact() {
	if n := len(sd.Spec.Steps); cap(sd.Spec.Steps) > n {
		sd.Spec.Steps = slices.Clone(sd.Spec.Steps)
	}
	names := map[string]string{}
	intern := func(v *string) {
		if u, ok := names[*v]; ok {
			*v = u
		} else {
			names[*v] = *v
		}
	}
	ids := make(map[string]string, len(sd.Spec.Steps))
	for i := range sd.Spec.Steps {
		s := &sd.Spec.Steps[i]
		intern(&s.Agent)
		intern(&s.Kind)
		ids[s.ID] = s.ID
	}
	for _, wave := range sd.Waves {
		for j, id := range wave {
			if u, ok := ids[id]; ok {
				wave[j] = u
			}
		}
	}
}

// Step returns the spec of step id.
func (sd *RunSpec) Step(id string) (pipelinespec.PipelineStep, bool) {
	p, ok := sd.pos[id]
	if !ok {
		return pipelinespec.PipelineStep{}, false
	}
	return sd.Spec.Steps[p.index], true
}

// Has reports whether the spec has a step id.
func (sd *RunSpec) Has(id string) bool {
	_, ok := sd.pos[id]
	return ok
}

// WaveOf returns the wave step id runs in; false for a step not in the spec.
func (sd *RunSpec) WaveOf(id string) (int, bool) {
	p, ok := sd.pos[id]
	if !ok || p.wave < 0 {
		return 0, false
	}
	return int(p.wave), true
}

// Timeout is the time budget of a step: its own, else for a loop or a
// sub-pipeline pipelinespec.DefaultFlowTimeout (the whole loop or child run),
// else its agent's, else schemas.DefaultTaskTimeout.
func (sd *RunSpec) Timeout(id string) time.Duration {
	s, _ := sd.Step(id)
	if s.TimeoutMS > 0 {
		return time.Duration(s.TimeoutMS) * time.Millisecond
	}
	if pipelinespec.IsLoopKind(s.Kind) || s.Kind == pipelinespec.StepKindPipeline {
		return pipelinespec.DefaultFlowTimeout
	}
	return sd.TaskTimeout(id)
}

// TaskTimeout is the time budget of one task of step id's agent (an item
// of a loop): its agent's, else schemas.DefaultTaskTimeout, and never over
// the step's own timeout_ms.
func (sd *RunSpec) TaskTimeout(id string) time.Duration {
	s, _ := sd.Step(id)
	t := schemas.DefaultTaskTimeout
	if c, ok := sd.Contracts[s.Agent]; ok && c.TimeoutMS > 0 {
		t = time.Duration(c.TimeoutMS) * time.Millisecond
	}
	if own := time.Duration(s.TimeoutMS) * time.Millisecond; own > 0 && own < t {
		t = own
	}
	return t
}

// RunHeader is the mutable, small part of a run (<run>). Its size depends on
// neither the width of a wave nor the length of the run: counts, the first
// MaxFailureLines failures, and the steps of the wave in progress that wait
// for a person.
type RunHeader struct {
	ID            string    `json:"id"`
	Name          string    `json:"name,omitempty"`
	Status        string    `json:"status"`
	Error         string    `json:"error,omitempty"`
	Code          string    `json:"code,omitempty"` // failed: the error code (schemas.Code*)
	Wave          int       `json:"wave"`           // the wave in progress; -1 before the first
	WaveStartedAt time.Time `json:"wave_started_at,omitzero"`
	Republished   bool      `json:"republished,omitempty"` // the wave's tasks were published again
	// Ends counts the ends of steps of the wave in progress that were
	// settled: at least the number of its steps with a record (a settle
	// repeated after a crash counts twice), so the wave is over when it
	// reaches the wave's width and every step's record is found.
	Ends int `json:"ends,omitempty"`
	// Completed, FailedSteps and SkippedSteps count the steps of the waves
	// over (all of them once the run has ended).
	Completed    int `json:"completed,omitempty"`
	FailedSteps  int `json:"failed_steps,omitempty"`
	SkippedSteps int `json:"skipped_steps,omitempty"`
	// CancelledSteps counts those of FailedSteps that failed with code
	// cancelled: a run with one ends cancelled, not failed.
	CancelledSteps int `json:"cancelled_steps,omitempty"`
	// Failures are the first MaxFailureLines lines of the run's error, one
	// per failed or skipped step ("step "x" (Agent) failed: ...").
	Failures []string `json:"failures,omitempty"`
	// Waiting are the approval and input steps of the wave in progress
	// that wait for a person: step -> what for ("approval: <prompt>").
	Waiting map[string]string `json:"waiting,omitempty"`
	// Approved are the agent steps of the wave in progress whose agent
	// asked for approval (code approval_required) and a person gave it:
	// step -> "approved by <who>[: comment]". Their task went out again as
	// attempt 2.
	Approved map[string]string `json:"approved,omitempty"`
	// Usage is the sum of the usage of the steps of the waves over (their
	// records hold each), added to once per wave.
	Usage      schemas.Usage `json:"usage,omitzero"`
	CreatedAt  time.Time     `json:"created_at"`
	UpdatedAt  time.Time     `json:"updated_at"`
	FinishedAt time.Time     `json:"finished_at,omitzero"`

	// The previous layout's lists, read so that a run written by it can be
	// upgraded (see Legacy); never written.
	LegacyWaveEnded []string          `json:"wave_ended,omitempty"`
	LegacyFailed    map[string]string `json:"failed,omitempty"`
	LegacySkipped   map[string]string `json:"skipped,omitempty"`
}

// MaxFailureLines bounds the failures a run's header keeps for its error;
// the error says how many more there were.
const MaxFailureLines = 20

// Clone returns a copy that shares nothing mutable with h.
func (h *RunHeader) Clone() *RunHeader {
	c := *h
	c.Failures = slices.Clone(h.Failures)
	c.Waiting = maps.Clone(h.Waiting)
	c.Approved = maps.Clone(h.Approved)
	c.LegacyWaveEnded = slices.Clone(h.LegacyWaveEnded)
	c.LegacyFailed = maps.Clone(h.LegacyFailed)
	c.LegacySkipped = maps.Clone(h.LegacySkipped)
	return &c
}

// Done reports whether the run has ended.
func (h *RunHeader) Done() bool {
	return schemas.RunEnded(h.Status)
}

// Running reports whether step id of sd is in the wave in progress of a
// run that has not ended: dispatched, and running unless its record says
// it ended.
func (h *RunHeader) Running(sd *RunSpec, id string) bool {
	w, ok := sd.WaveOf(id)
	return ok && !h.Done() && h.Wave == w
}

// Legacy reports whether h was written by the previous layout, whose header
// listed the ended steps of the wave in progress and the run's failures and
// skips by step. Such a header is read as it is; UpgradeHeader turns it
// into this layout.
func (h *RunHeader) Legacy() bool {
	return h.LegacyWaveEnded != nil || h.LegacyFailed != nil || h.LegacySkipped != nil
}

// FailedCount and SkippedCount are the steps failed and skipped as far as
// h knows (the waves over, or a legacy header's lists).
func (h *RunHeader) FailedCount() int  { return h.FailedSteps + len(h.LegacyFailed) }
func (h *RunHeader) SkippedCount() int { return h.SkippedSteps + len(h.LegacySkipped) }

// Run loads a run, assembled from its keys. A missing one wraps ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (*RunState, error) {
	if err := bus.ValidateToken("run id", id); err != nil {
		return nil, err
	}
	var h RunHeader
	if _, err := s.getJSON(ctx, id, &h); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%w: no run %q in bucket %s", ErrNotFound, id, s.runs.Bucket())
		}
		return nil, err
	}
	var sd RunSpec
	if _, err := s.getOnceJSON(ctx, specKey(id), &sd); err != nil {
		return nil, fmt.Errorf("run %q: %w", id, err)
	}
	sd.Init()
	st := schemas.NewConversationState(id)
	if _, err := s.getJSON(ctx, stateKey(id), st); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("run %q: %w", id, err)
	}
	if st.Slots == nil {
		st.Slots = map[string]schemas.TypedValue{}
	}
	st.History, st.AppliedTasks = nil, nil // assembled from the records below
	r := &RunState{ID: id, Name: h.Name, Status: h.Status, Error: h.Error, Code: h.Code, Spec: sd.Spec, Contracts: sd.Contracts,
		Waves: sd.Waves, Wave: max(h.Wave, 0), Steps: map[string]*StepState{}, State: st,
		CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt, FinishedAt: h.FinishedAt, Origin: sd.Origin}
	for _, step := range sd.Spec.Steps {
		w, inWave := sd.WaveOf(step.ID)
		st := &StepState{ID: step.ID, Agent: step.Agent, Wave: w, Status: schemas.StepPending}
		r.Steps[step.ID] = st
		switch {
		case !inWave || w > h.Wave:
		case h.LegacySkipped[step.ID] != "":
			st.Status, st.Reason = schemas.StepSkipped, h.LegacySkipped[step.ID]
		default:
			var rec StepState
			_, err := s.getOnceJSON(ctx, stepKey(id, step.ID), &rec)
			switch {
			case err == nil:
				r.Steps[step.ID] = &rec
				if rec.Status == schemas.StepCompleted && len(rec.Outputs) > 0 && rec.Agent != "" && !r.State.Applied(rec.TaskID) {
					// The history of a run is its records: the steps whose
					// outputs were routed, with their outputs.
					r.State.History = append(r.State.History, schemas.HistoryEntry{At: rec.FinishedAt, Kind: "result",
						Agent: rec.Agent, TaskID: rec.TaskID, Text: rec.Summary, Outputs: rec.Outputs})
					r.State.AppliedTasks = append(r.State.AppliedTasks, rec.TaskID)
				}
			case errors.Is(err, ErrNotFound):
				if h.Running(&sd, step.ID) {
					st.Status, st.Attempt, st.TaskID = schemas.StepRunning, 1, pipelinespec.StepTaskID(id, step.ID, 1, sd.Nonce)
					if w, ok := h.Waiting[step.ID]; ok {
						st.Status, st.Reason = schemas.StepWaiting, w
					}
					if pipelinespec.IsLoopKind(step.Kind) {
						if p, _, err := s.LoopProgress(ctx, id, step.ID); err == nil {
							st.Reason = p.Describe()
						}
					}
					st.DispatchedAt, st.Deadline = h.WaveStartedAt, h.WaveStartedAt.Add(sd.Timeout(step.ID))
				}
			default:
				return nil, fmt.Errorf("run %q: %w", id, err)
			}
		}
	}
	return r, nil
}

// getJSON reads key from the runs bucket into dst and returns its revision.
// A missing key wraps ErrNotFound.
func (s *Store) getJSON(ctx context.Context, key string, dst any) (uint64, error) {
	return s.getJSONFrom(ctx, s.runs, key, dst)
}

// getOnceJSON is getJSON for a key written once, with create (a run's
// spec, a step's record, a loop's items and item records): any replica
// that holds it holds the value that stands, so a direct get that finds
// it is the truth; one that does not may be a lagging replica's, and
// is asked again of the leader (see WithLeaderReads).
func (s *Store) getOnceJSON(ctx context.Context, key string, dst any) (uint64, error) {
	rev, err := s.getJSONFrom(ctx, s.runsAny, key, dst)
	if errors.Is(err, ErrNotFound) && s.leaderJS != nil {
		return s.getJSON(ctx, key, dst)
	}
	return rev, err
}

func (s *Store) getJSONFrom(ctx context.Context, kv jetstream.KeyValue, key string, dst any) (uint64, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return 0, fmt.Errorf("%w: no key %q in bucket %s", ErrNotFound, key, s.runs.Bucket())
	}
	if err != nil {
		return 0, fmt.Errorf("reading %q: %w", key, err)
	}
	if err := json.Unmarshal(e.Value(), dst); err != nil {
		return 0, fmt.Errorf("%w: %q: %w", ErrCorrupt, key, err)
	}
	return e.Revision(), nil
}

// CreateRun stores a new run: its spec, its state (the seed slots) and,
// last, its header, whose creation is the moment the run exists. A run
// with the same id wraps ErrExists. A run whose spec the same submission
// stored before stopping half way is finished from that spec: sd becomes
// it (its nonce, not sd's, names the run's tasks). It returns the
// header's revision.
func (s *Store) CreateRun(ctx context.Context, sd *RunSpec, h *RunHeader, st *schemas.ConversationState) (uint64, error) {
	// Everything is encoded before anything is written: a run too large to
	// store leaves no key behind.
	b, err := s.Encode(sd, nil)
	if err != nil {
		return 0, err
	}
	sb, err := s.Encode(st, st)
	if err != nil {
		return 0, err
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return 0, err
	}
	if _, err := s.runs.Create(ctx, specKey(sd.ID), b); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return 0, fmt.Errorf("creating run %q: %w", sd.ID, err)
		}
		// A redelivered submission, or one that stopped half way.
		if _, err := s.runs.Get(ctx, sd.ID); err == nil {
			return 0, fmt.Errorf("%w: run %q", ErrExists, sd.ID)
		}
		// Half way: the spec stored stands (its nonce names the run's
		// tasks), for the same submission; sd becomes it.
		var stored RunSpec
		if _, err := s.getOnceJSON(ctx, specKey(sd.ID), &stored); err != nil {
			return 0, fmt.Errorf("creating run %q: %w", sd.ID, err)
		}
		if stored.Submission != sd.Submission {
			return 0, fmt.Errorf("%w: run %q", ErrExists, sd.ID)
		}
		*sd = stored
		sd.Init()
	}
	if _, err := s.runs.Create(ctx, stateKey(sd.ID), sb); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("creating run %q: %w", sd.ID, err)
	}
	rev, err := s.runs.Create(ctx, sd.ID, hb)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("%w: run %q", ErrExists, sd.ID)
	}
	if err != nil {
		return 0, fmt.Errorf("creating run %q: %w", sd.ID, err)
	}
	return rev, nil
}

// UpdateHeader applies fn to the header with compare-and-set, starting from
// h at revision rev when the caller has them (no read when it is current).
// fn may run more than once, on a fresh copy each time; ErrUnchanged skips
// the write (decided on the stored header, never on the caller's copy alone)
// and returns the header read with its revision.
func (s *Store) UpdateHeader(ctx context.Context, id string, h *RunHeader, rev uint64, fn func(*RunHeader) error) (*RunHeader, uint64, error) {
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		given := h != nil
		if h == nil {
			h = &RunHeader{}
			var err error
			if rev, err = s.getJSON(ctx, id, h); err != nil {
				return nil, 0, err
			}
		}
		next := h.Clone()
		if err := fn(next); err != nil {
			if errors.Is(err, ErrUnchanged) && given {
				h = nil // the caller's copy may be behind: decide on the stored one
				continue
			}
			if errors.Is(err, ErrUnchanged) {
				return h, rev, err
			}
			return nil, 0, err
		}
		next.UpdatedAt = time.Now().UTC()
		b, err := json.Marshal(next)
		if err != nil {
			return nil, 0, err
		}
		nrev, err := s.runs.Update(ctx, id, b, rev)
		if err == nil {
			return next, nrev, nil
		}
		if !IsConflict(err) {
			return nil, 0, fmt.Errorf("writing run %q: %w", id, err)
		}
		h = nil // stale: read again
		if err := Backoff(ctx, attempt); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("%w: run %q after %d attempts", ErrConflict, id, maxUpdateAttempts)
}

// RecordStep writes the record of a step's end unless one exists, and
// returns the record that stands (the first one written).
func (s *Store) RecordStep(ctx context.Context, runID string, rec *StepState) (*StepState, error) {
	b, err := s.Encode(rec, nil)
	if errors.Is(err, ErrTooLarge) {
		// Outputs too large for KV: keep the end, say why the values are gone.
		small := *rec
		small.Outputs = nil
		small.Summary = fmt.Sprintf("%s [outputs dropped: %v]", rec.Summary, err)
		rec, err = &small, nil
		b, err = json.Marshal(rec)
	}
	if err != nil {
		return nil, err
	}
	_, err = s.runs.Create(ctx, stepKey(runID, rec.ID), b)
	if err == nil {
		return rec, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("recording step %q of run %q: %w", rec.ID, runID, err)
	}
	var have StepState
	if _, err := s.getOnceJSON(ctx, stepKey(runID, rec.ID), &have); err != nil {
		return nil, err
	}
	return &have, nil
}

// StepRecord reads the record of a step's end; ErrNotFound while it runs.
func (s *Store) StepRecord(ctx context.Context, runID, stepID string) (*StepState, error) {
	var rec StepState
	if _, err := s.getOnceJSON(ctx, stepKey(runID, stepID), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// RunSlots reads the slots of a run's state.
func (s *Store) RunSlots(ctx context.Context, runID string) (map[string]schemas.TypedValue, error) {
	st := schemas.NewConversationState(runID)
	if _, err := s.getJSON(ctx, stateKey(runID), st); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return st.Slots, nil
}

// UpdateRunState applies fn to a run's slots and history with
// compare-and-set (see UpdateConversation), and returns the value it wrote
// and its revision (nil and 0 when fn changed nothing).
func (s *Store) UpdateRunState(ctx context.Context, runID string, fn func(*schemas.ConversationState) error) ([]byte, uint64, error) {
	return s.updateRev(ctx, s.runs, "run state", stateKey(runID), true, func(raw []byte) ([]byte, error) {
		return s.ApplyRunState(runID, raw, fn)
	})
}

// ApplyRunState decodes a run's stored state (raw; nil: none yet), applies
// fn and encodes the result.
func (s *Store) ApplyRunState(runID string, raw []byte, fn func(*schemas.ConversationState) error) ([]byte, error) {
	b, _, err := s.ApplyRunStateFrom(runID, raw, nil, fn)
	return b, err
}

// ApplyRunStateFrom is ApplyRunState for a caller that kept raw decoded
// (cur, nil when it did not): fn then works on a clone of cur rather than
// on a new decoding of raw, which for a long run is most of a step's CPU.
// cur is not changed. It also returns the state it encoded, the decoded
// form of the returned bytes for the next call.
func (s *Store) ApplyRunStateFrom(runID string, raw []byte, cur *schemas.ConversationState, fn func(*schemas.ConversationState) error) ([]byte, *schemas.ConversationState, error) {
	var st *schemas.ConversationState
	if cur != nil {
		st = cloneState(cur)
	} else {
		var err error
		if st, err = decodeState("run", runID, raw); err != nil {
			return nil, nil, err
		}
	}
	if err := fn(st); err != nil {
		return nil, nil, err
	}
	st.UpdatedAt = time.Now().UTC()
	b, err := s.Encode(st, st)
	if err != nil {
		return nil, nil, err
	}
	return b, st, nil
}

// cloneState copies st so that what a routing changes (slots, history,
// applied tasks, and the entries of the history in place, as compaction
// does) leaves st as it was. Values and the outputs maps of history
// entries are shared: an update replaces them, never writes into them.
func cloneState(st *schemas.ConversationState) *schemas.ConversationState {
	c := *st
	c.Slots = maps.Clone(st.Slots)
	if c.Slots == nil {
		c.Slots = map[string]schemas.TypedValue{}
	}
	c.History = slices.Clone(st.History)
	c.AppliedTasks = slices.Clone(st.AppliedTasks)
	return &c
}
