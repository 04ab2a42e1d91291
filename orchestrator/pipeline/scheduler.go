package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/internal/pipespec"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// config is a Scheduler's configuration, set by its options (see New).
// Zero fields take the defaults.
type config struct {
	// Sweep is how often overdue steps are timed out and unconfirmed
	// dispatches re-published (default 1 s).
	Sweep time.Duration
	// Grace is how long after a step's deadline the sweep fails it, leaving
	// the agent time to report its own timeout (default 1 s).
	Grace time.Duration
	// Republish is how long after a wave started the sweep publishes its
	// tasks again when no result came (default 2 s).
	Republish time.Duration
	// AckWait is the results consumer's: an early result waits at most half
	// of it for the header that starts its wave (default 5 s).
	AckWait time.Duration
	// Source is the CloudEvents source of the events it emits.
	Source string
	// Model, when set, is asked by router steps to choose their branch;
	// without one they follow their rules.
	Model Model
	// Pipelines, when set, returns the spec of a pipeline by name, for the
	// steps of kind pipeline that name one (see resolveSubs).
	Pipelines func(name string) (pipelinespec.PipelineSpec, error)
	// Limits bound what a submitted spec may ask (zero fields: the
	// defaults, see pipelinespec.Limits).
	Limits   pipelinespec.Limits
	Logger   *slog.Logger
	Observer schemas.Observer

	Names      bus.Names
	Store      *state.Store
	Router     *route.Router
	Dispatcher *meshcore.Dispatcher
	Lookup     ContractLookup
}

// Scheduler runs pipelines on one replica: it accepts submissions, applies
// step results, starts waves and sweeps for overdue steps. Every fact lives
// in the state store; the scheduler only caches what it read or wrote (see
// cache.go), so any number of replicas may run side by side and a killed
// one loses nothing. It is safe for concurrent use.
type Scheduler struct {
	cfg        config
	nc         *nats.Conn
	js         jetstream.JetStream // stores the events that end a run (see emitEnd)
	names      bus.Names
	store      *state.Store
	router     *route.Router
	dispatcher *meshcore.Dispatcher
	lookup     ContractLookup
	log        *slog.Logger
	observer   schemas.Observer

	locks keyedMutex // serialises this replica's header updates of one run
	cache runCache
	loops loopCache

	batchMu sync.Mutex
	batches map[string]*settleBatch // per run: records waiting for the header update

	mu          sync.Mutex
	active      map[string]bool        // runs this replica's sweep looks at
	dirty       map[string]bool        // runs changed since the last sweep
	stalls      map[string]time.Time   // per run, when sweepStall last looked
	unsent      map[string]*nats.Msg   // by message id: ends not stored yet, sent again by the sweep
	republished map[string]republishAt // per run, when the sweep last published its wave again
}

// New returns a scheduler that publishes events on nc. Its options:
//   - what it works with: WithNames, WithStore (required: where runs are
//     kept), WithLookup (required: the live contracts pipelines are checked
//     against), WithRouter, WithDispatcher, WithModel, WithPipelines;
//   - its timing: WithSweep, WithGrace, WithRepublish, WithAckWait;
//   - what it emits and reports: WithSource, WithLimits, WithLogger,
//     WithObserver.
func New(nc *nats.Conn, opts ...Option) (*Scheduler, error) {
	cfg := config{Names: bus.MustNames(bus.DefaultPrefix)}
	for _, o := range opts {
		o(&cfg)
	}
	var missing []error
	if cfg.Store == nil {
		missing = append(missing, fmt.Errorf("%w: no state store: give one with WithStore", ErrConfig))
	}
	if cfg.Lookup == nil {
		missing = append(missing, fmt.Errorf("%w: no contract lookup: give the live contracts with WithLookup", ErrConfig))
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	if cfg.Sweep <= 0 {
		cfg.Sweep = time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Second
	}
	if cfg.Republish <= 0 {
		cfg.Republish = 2 * time.Second
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 5 * time.Second
	}
	if cfg.Source == "" {
		cfg.Source = "agentmesh/orchestrator"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Logger = telemetry.Logger(cfg.Logger)
	if cfg.Observer == nil {
		cfg.Observer = schemas.NopObserver{}
	}
	cfg.Limits = cfg.Limits.OrDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("pipeline: jetstream: %w", err)
	}
	if cfg.Router == nil {
		cfg.Router = route.NewRouter()
	}
	if cfg.Dispatcher == nil {
		cfg.Dispatcher = meshcore.NewDispatcher(js, cfg.Names, cfg.Source).WithLogger(cfg.Logger)
	}
	return &Scheduler{cfg: cfg, nc: nc, js: js, names: cfg.Names, store: cfg.Store, router: cfg.Router, dispatcher: cfg.Dispatcher,
		lookup: cfg.Lookup, log: cfg.Logger, observer: cfg.Observer,
		batches: map[string]*settleBatch{}, active: map[string]bool{}, dirty: map[string]bool{}}, nil
}

// Reject reports a submission that cannot be accepted, touching no state:
// a failed io.agentmesh.pipeline.completed with cause's code on
// mesh.events.<id>.pipeline (.<c> for the requester c in ctx, who alone
// waits for it), where id is the first of ids (the run id, then the
// submission's event id) that can be a subject token. When none can it
// publishes nothing and returns an error wrapping bus.ErrNoReplySubject.
func (s *Scheduler) Reject(ctx context.Context, cause error, ids ...string) error {
	to := bus.ReplyToken(ids...)
	if to == "" {
		return fmt.Errorf("%w: %w", bus.ErrNoReplySubject, cause)
	}
	s.emitEnd(ctx, s.names.ForClient(bus.Requester(ctx)).Events(to, "pipeline"), bus.TypePipelineCompleted, "refused-"+strings.Join(ids, "/"),
		schemas.RunEvent{RunID: to, Status: schemas.RunFailed, Error: cause.Error(), Code: schemas.CodeOf(cause)},
		func(e *bus.Event) { e.SetExt(bus.ExtRunID, to) })
	return nil
}

func (s *Scheduler) loadSpec(ctx context.Context, id string) (*state.RunSpec, error) {
	if sd := s.cache.spec(id); sd != nil {
		return sd, nil
	}
	// One read per run at a time: the results of a wide wave arriving on a
	// replica that has not cached the run's spec would each read it (a
	// 10,000-step spec each).
	unlock := s.locks.lock(id + "\x00spec")
	defer unlock()
	if sd := s.cache.spec(id); sd != nil {
		return sd, nil
	}
	sd, err := s.store.Spec(ctx, id)
	if err != nil {
		return nil, err
	}
	s.cache.putSpec(sd)
	return sd, nil
}

// loadHeader returns the run's header: the cached one unless fresh.
func (s *Scheduler) loadHeader(ctx context.Context, id string, fresh bool) (*state.RunHeader, error) {
	if !fresh {
		if h, _ := s.cache.header(id); h != nil {
			return h, nil
		}
	}
	sd, err := s.loadSpec(ctx, id)
	if err != nil {
		return nil, err
	}
	h, _, err := s.freshHeader(ctx, sd)
	return h, err
}

// freshHeader reads the run's header, upgrades one of the previous layout
// (see upgrade), caches it and returns it with its revision.
func (s *Scheduler) freshHeader(ctx context.Context, sd *state.RunSpec) (*state.RunHeader, uint64, error) {
	h, rev, err := s.store.Header(ctx, sd.ID)
	if err != nil {
		return nil, 0, err
	}
	if h.Legacy() && !h.Done() {
		if h, rev, err = s.upgrade(ctx, sd, h, rev); err != nil {
			return nil, 0, err
		}
	}
	s.cache.putHeader(h, rev)
	return h, rev, nil
}

func (s *Scheduler) loadRecord(ctx context.Context, run, step string) (*state.StepState, error) {
	if rec := s.cache.record(run, step); rec != nil {
		return rec, nil
	}
	rec, err := s.store.StepRecord(ctx, run, step)
	if err != nil {
		return nil, err
	}
	s.cache.putRead(run, rec)
	return rec, nil
}

// Submit validates a submitted pipeline, saves its run and dispatches its
// first wave. A pipeline that fails validation is saved as a failed run
// and reported, and nothing runs.
func (s *Scheduler) Submit(ctx context.Context, ev bus.Event) error {
	runID := ev.Ext(bus.ExtRunID)
	if runID == "" {
		runID = ev.ID
	}
	if err := bus.ValidateToken("run id", runID); err != nil {
		// Refused, and answered on the submission's event id.
		return s.Reject(ctx, fmt.Errorf("%w; the refusal is on the submission's event id", err), ev.ID)
	}
	var spec pipelinespec.PipelineSpec
	verr := bus.DecodeData(ev, &spec, func(b []byte) error { return schemas.ValidateJSON(schemas.SchemaPipeline, b) })
	if verr == nil {
		spec, verr = pipespec.Normalize(spec)
	}
	var (
		contracts map[string]schemas.AgentContract
		waves     [][]string
	)
	if verr == nil {
		var rerr error // names that do not resolve, reported with the rest
		spec, rerr = resolveSubs(spec, s.cfg.Pipelines, []string{spec.Name}, s.cfg.Limits.Depth)
		contracts, waves, verr = ValidateWithin(spec, s.lookup, s.router, s.cfg.Limits)
		switch {
		case rerr != nil && verr == nil:
			verr = fmt.Errorf("%w %q: %w", ErrInvalidPipeline, spec.Name, rerr)
		case rerr != nil:
			verr = errors.Join(verr, rerr)
		}
		if verr == nil && s.cfg.Model == nil {
			verr = needsModel(spec)
		}
	} else if errors.Is(verr, schemas.ErrLimitExceeded) {
		verr = fmt.Errorf("%w: %w", ErrInvalidPipeline, verr)
	} else {
		// A spec that does not decode, or fails its schema, is an invalid
		// pipeline, not a malformed event: the event was read.
		verr = fmt.Errorf("%w: %v", ErrInvalidPipeline, verr)
	}
	return s.create(ctx, ev, &state.RunSpec{ID: runID, Spec: spec, Contracts: contracts, Waves: waves}, verr)
}

// create stores run sd (its spec, contracts, waves and, for a fork, its
// origin filled in), submitted by event ev, and starts it: failed at once
// when verr, the spec's validation, is not nil.
func (s *Scheduler) create(ctx context.Context, ev bus.Event, sd *state.RunSpec, verr error) error {
	runID, spec, now := sd.ID, sd.Spec, time.Now().UTC()
	sd.CreatedAt, sd.Submission, sd.TraceParent = now, ev.ID, ev.Ext(bus.ExtTraceParent)
	sd.Nonce, sd.Owner = schemas.NewRunNonce(), bus.Requester(ctx)
	sd.Init()
	var ch runChanges
	h := newHeader(sd, spec.Name, verr, now, &ch)
	st := schemas.NewConversationState(runID)
	maps.Copy(st.Slots, seedSlots(spec.Seed, s.router))
	rev, err := s.store.CreateRun(ctx, sd, h, st)
	if err != nil {
		if errors.Is(err, state.ErrExists) {
			return s.taken(ctx, runID, ev.ID)
		}
		if errors.Is(err, state.ErrTooLarge) {
			return s.Reject(ctx, err, runID, ev.ID)
		}
		return err
	}
	s.cache.putSpec(sd)
	s.cache.putHeader(h, rev)
	s.track(runID)
	if h.Status == schemas.RunRunning {
		s.emitRun(h, sd)
	}
	s.follow(ctx, sd, h, &ch)
	return nil
}

// startChild validates spec and starts it as run childID, the child of
// step parent.Step of sd (see env.startRun).
func (s *Scheduler) startChild(ctx context.Context, sd *state.RunSpec, childID string, spec pipelinespec.PipelineSpec, parent state.RunParent, started func()) error {
	contracts, waves, verr := ValidateWithin(spec, s.lookup, s.router, s.cfg.Limits)
	if verr != nil {
		return &childRefused{code: schemas.CodeInvalidPipeline, err: verr}
	}
	now := time.Now().UTC()
	child := (&state.RunSpec{ID: childID, Spec: spec, Contracts: contracts, Waves: waves, CreatedAt: now,
		TraceParent: sd.TraceParent, Parent: &parent, Nonce: schemas.NewRunNonce(), Owner: sd.Owner}).Init()
	var ch runChanges
	h := newHeader(child, spec.Name, nil, now, &ch)
	st := schemas.NewConversationState(childID)
	maps.Copy(st.Slots, seedSlots(spec.Seed, s.router))
	rev, err := s.store.CreateRun(ctx, child, h, st)
	switch {
	case errors.Is(err, state.ErrExists):
		return nil // another replica started it
	case errors.Is(err, state.ErrTooLarge):
		return &childRefused{code: schemas.CodeTooLarge, err: err}
	case err != nil:
		return err
	}
	s.cache.putSpec(child)
	s.cache.putHeader(h, rev)
	s.track(childID)
	if started != nil {
		started()
	}
	if h.Status == schemas.RunRunning {
		s.emitRun(h, child)
	}
	s.follow(ctx, child, h, &ch)
	return nil
}

// taken handles a submission whose run id names a run that exists: a
// redelivery of the submission that started it finds it under way; another
// submission is refused on its own event id, leaving the run's events alone.
func (s *Scheduler) taken(ctx context.Context, runID, submission string) error {
	sd, err := s.store.Spec(ctx, runID)
	if err != nil || sd.Submission == "" || sd.Submission == submission {
		return nil // a redelivered submission (or one from before submissions were kept)
	}
	return s.Reject(ctx, fmt.Errorf("%w: run id %q is taken by an earlier run: submit with another run id (or none)",
		bus.ErrInvalidName, runID), submission)
}

// ApplyResult records the result of a step's task and does the
// follow-up (next wave, events). A duplicate or late result changes
// nothing: the step's record is written once, by the first of its result
// and its timeout.
func (s *Scheduler) ApplyResult(ctx context.Context, runID, stepID, taskID string, res schemas.AgentResult) error {
	if bus.ValidateToken("run id", runID) != nil {
		return nil
	}
	sd, err := s.loadSpec(ctx, runID)
	if err != nil {
		return err
	}
	step, ok := sd.Step(stepID)
	if !ok {
		return nil
	}
	k, err := kindOf(step)
	if err != nil || !k.owns(sd, stepID, taskID) {
		return nil
	}
	h, err := s.loadHeader(ctx, runID, false)
	if err != nil {
		return err
	}
	return k.result(ctx, schedEnv{s}, sd, h, stepID, taskID, res)
}

// inWave returns the header of run sd when its wave in progress is step
// id's: h (maybe cached) when it says so, else the stored header. It
// returns nil when the step's wave is over (a duplicate or late result),
// and an error wrapping ErrEarly when the stored header has not started
// the step's wave yet.
func (s *Scheduler) inWave(ctx context.Context, sd *state.RunSpec, h *state.RunHeader, id string) (*state.RunHeader, error) {
	var err error
	if early(sd, h, id) {
		// The task went out ahead of the header that starts its wave
		// (see dispatchAhead), and that header may be being written on
		// this replica: wait for the write.
		if over := s.cache.aheadWrite(sd.ID); over != nil {
			select {
			case <-over:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(s.cfg.AckWait / 2):
			}
		}
		if h, err = s.loadHeader(ctx, sd.ID, false); err != nil {
			return nil, err
		}
	}
	if h.Running(sd, id) {
		return h, nil
	}
	// The cached header may be behind another replica's: read it.
	if h, err = s.loadHeader(ctx, sd.ID, true); err != nil {
		return nil, err
	}
	if early(sd, h, id) {
		return nil, fmt.Errorf("%w: step %q of run %s is in wave %d, the run is in wave %d", ErrEarly, id, sd.ID, waveOf(sd, id), h.Wave)
	}
	if !h.Running(sd, id) {
		return nil, nil // a duplicate, or late: the step has ended
	}
	return h, nil
}

// ApplyResultFrom is ApplyResult for a result that came from agent (the
// agent token of its subject, which only that agent's identity may publish
// on when the mesh is secure): a result for a step of another agent changes
// nothing and is an error wrapping ErrWrongAgent.
func (s *Scheduler) ApplyResultFrom(ctx context.Context, from, runID, stepID, taskID string, res schemas.AgentResult) error {
	if bus.ValidateToken("run id", runID) != nil {
		return nil
	}
	sd, err := s.loadSpec(ctx, runID)
	if err != nil {
		return err
	}
	if step, ok := sd.Step(stepID); ok && step.Agent != from {
		return fmt.Errorf("%w: a result for step %q of run %s, which went to %s, came from %s", ErrWrongAgent, stepID, runID, step.Agent, from)
	}
	return s.ApplyResult(ctx, runID, stepID, taskID, res)
}

// ErrWrongAgent is a result from an agent other than the one its task went
// to: it is dropped.
var ErrWrongAgent = errors.New("result from the wrong agent")

// FailUndecodable ends a step whose result, from agent from, could not be
// decoded: the step fails at once with code malformed_result and the
// decode error, as if the agent had answered so, instead of waiting out its
// timeout; a loop item so ends fails its loop step. The step is named by
// stepID, or else by taskID (<run>-<step>-1, or a loop item's
// <run>-<step>-1-<item>).
// It returns the step's agent, "" when no step of the run is named, an
// error wrapping ErrWrongAgent when the step went to another agent than
// from, and the errors of ApplyResult (ErrEarly: try again shortly).
func (s *Scheduler) FailUndecodable(ctx context.Context, from, runID, stepID, taskID string, cause error) (agent string, err error) {
	if bus.ValidateToken("run id", runID) != nil {
		return "", nil
	}
	sd, err := s.loadSpec(ctx, runID)
	if err != nil {
		return "", err
	}
	if !sd.Has(stepID) {
		stepID = stepOfTask(sd, taskID)
	}
	step, ok := sd.Step(stepID)
	if !ok {
		return "", nil
	}
	if step.Agent != from {
		return "", fmt.Errorf("%w: an undecodable result for step %q of run %s, which went to %s, came from %s", ErrWrongAgent, stepID, runID, step.Agent, from)
	}
	if k, err := kindOf(step); err != nil || !k.owns(sd, stepID, taskID) {
		taskID = pipelinespec.StepTaskID(runID, stepID, 1, sd.Nonce)
	}
	res := schemas.Failure(step.Agent, schemas.CodeMalformedResult,
		fmt.Sprintf("the result of task %s could not be decoded: %v", taskID, cause), false)
	return step.Agent, s.ApplyResult(ctx, runID, stepID, taskID, res)
}

// stepOfTask is the step of run sd that task id taskID names: an agent
// step's first task, or a loop item's (pipelinespec.StepTaskID,
// pipelinespec.LoopTaskID); "" when it names none.
func stepOfTask(sd *state.RunSpec, taskID string) string {
	if !strings.HasPrefix(taskID, sd.ID+"-") {
		return ""
	}
	for _, step := range sd.Spec.Steps {
		if k, err := kindOf(step); err == nil && k.owns(sd, step.ID, taskID) {
			return step.ID
		}
	}
	return ""
}

// ErrEarly is a result of a step whose wave has not started as far as the
// stored header says (or of an approved task whose approval is not yet
// recorded): it is handled again shortly, once the header that starts the
// wave (or records the approval) is written.
var ErrEarly = errors.New("result ahead of its wave")

// early reports whether step id's wave is after the wave in progress of a
// running run: its task went out ahead of the header (see dispatchAhead).
func early(sd *state.RunSpec, h *state.RunHeader, id string) bool {
	w, ok := sd.WaveOf(id)
	return ok && !h.Done() && w > h.Wave
}
