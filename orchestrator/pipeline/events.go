package pipeline

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// stepEvent describes how a step ended.
func stepEvent(runID string, st *state.StepState, now time.Time) schemas.StepEvent {
	e := schemas.StepEvent{RunID: runID, Step: st.ID, Agent: st.Agent, Status: st.Status, Wave: st.Wave, Attempt: st.Attempt,
		TaskID: st.TaskID, Summary: st.Summary, Error: st.Error, Code: st.Code, Reason: st.Reason, At: now, Usage: st.Metrics.Usage(),
		From: st.From}
	if !st.DispatchedAt.IsZero() && !st.FinishedAt.IsZero() {
		e.DurationMS = st.FinishedAt.Sub(st.DispatchedAt).Milliseconds()
	}
	for name, v := range st.Outputs {
		if e.Outputs == nil {
			e.Outputs = map[string]schemas.OutputSummary{}
		}
		s := schemas.OutputSummary{DataType: v.DataType, Hint: v.ContentTypeHint}
		if v.DataType == schemas.TypeFileIDs {
			if fc, err := v.Files(); err == nil {
				s.Count = fc.Count()
			}
		}
		e.Outputs[name] = s
	}
	return e
}

// runEvent describes how a run ended, with the header's counts.
func runEvent(h *state.RunHeader, sd *state.RunSpec) schemas.RunEvent {
	steps := len(sd.Spec.Steps)
	e := schemas.RunEvent{RunID: h.ID, Name: h.Name, Status: h.Status, Error: h.Error, Code: h.Code, Steps: steps,
		Failed: h.FailedCount(), Skipped: h.SkippedCount(), Completed: h.CompletedSteps(sd), Usage: h.Usage, Origin: sd.Origin}
	if !h.FinishedAt.IsZero() {
		e.DurationMS = h.FinishedAt.Sub(h.CreatedAt).Milliseconds()
	}
	return e
}

// runContext is the context a run's observations are told with: it
// carries the submission's trace (see telemetry.Observer) and the run id
// for log lines.
func runContext(sd *state.RunSpec) context.Context {
	return telemetry.WithLogAttrs(telemetry.WithTraceParent(context.Background(), sd.TraceParent), "run", sd.ID)
}

// emitStep publishes a step's transition and tells the observer: every
// step transition goes through here.
func (s *Scheduler) emitStep(sd *state.RunSpec, e schemas.StepEvent) {
	typ := bus.TypeStepCompleted
	switch e.Status {
	case schemas.StepRunning:
		typ = bus.TypeStepStarted
	case schemas.StepFailed:
		typ = bus.TypeStepFailed
	case schemas.StepSkipped:
		typ = bus.TypeStepSkipped
	case schemas.StepWaiting:
		typ = bus.TypeStepWaiting
	}
	if step, ok := sd.Step(e.Step); ok && e.Kind == "" {
		e.Kind = step.Kind
		if e.Kind == "" {
			e.Kind = KindAgent
		}
	}
	s.observer.Observe(telemetry.WithLogAttrs(runContext(sd), "step", e.Step), schemas.StepChanged{RunID: e.RunID, StepID: e.Step, Kind: e.Kind, Agent: e.Agent,
		Status: e.Status, Wave: e.Wave, Error: e.Error, Duration: time.Duration(e.DurationMS) * time.Millisecond, Metrics: e.Usage.Metrics()})
	ev, err := bus.NewEvent(typ, s.cfg.Source, e)
	if err == nil {
		ev.SetExt(bus.ExtRunID, e.RunID)
		ev.SetExt(bus.ExtStepID, e.Step)
		var msg *nats.Msg
		if msg, err = bus.Encode(s.names.ForClient(sd.Owner).Events(e.RunID, "pipeline"), ev); err == nil {
			// One transition is stored once, whichever replica or path
			// sends it (inside the stream's duplicate window).
			id := "step-" + e.RunID + "-" + e.Step + "-" + e.Status
			if e.TaskID != "" && e.TaskID != pipelinespec.StepTaskID(e.RunID, e.Step, 1, sd.Nonce) {
				id += "-" + e.TaskID // a loop's item, a sub-pipeline's run
			}
			msg.Header.Set(jetstream.MsgIDHeader, id)
			err = s.nc.PublishMsg(msg)
		}
	}
	if err != nil {
		s.log.Warn("event", "type", typ, "err", err)
	}
}

// emitStarted reports that step id of the wave h started begins: it is
// sent before the step's task, so it precedes everything the task leads to.
func (s *Scheduler) emitStarted(sd *state.RunSpec, h *state.RunHeader, id string) {
	step, _ := sd.Step(id)
	s.emitStep(sd, schemas.StepEvent{RunID: h.ID, Step: id, Agent: step.Agent, Status: schemas.StepRunning, Wave: h.Wave,
		Attempt: 1, TaskID: pipelinespec.StepTaskID(h.ID, id, 1, sd.Nonce), At: h.WaveStartedAt})
}

// emitRun publishes a run's end and tells the observer; a run's start is
// told to the observer only (its first step events follow).
func (s *Scheduler) emitRun(h *state.RunHeader, sd *state.RunSpec) {
	e := runEvent(h, sd)
	s.observer.Observe(runContext(sd), schemas.RunChanged{RunID: e.RunID, Name: e.Name, Status: e.Status,
		Error: e.Error, Steps: e.Steps, Duration: time.Duration(e.DurationMS) * time.Millisecond, Usage: e.Usage})
	if h.Status == schemas.RunRunning {
		return
	}
	s.emitEnd(runContext(sd), s.names.ForClient(sd.Owner).Events(h.ID, "pipeline"), bus.TypePipelineCompleted, "run-"+h.ID+"-"+h.Status, e,
		func(ev *bus.Event) { ev.SetExt(bus.ExtRunID, h.ID) })
}

// maxUnsent bounds the ends a replica keeps to send again.
const maxUnsent = 10_000

// emitEnd publishes an event that ends a request its sender waits for (a
// run's end, a refused submission) through JetStream, waiting for the
// events stream to store it and trying again while no server can answer
// (bus.Publish); msgID stores it once, whoever sends it how often. A core
// publish would be dropped without a word while the stream has no leader
// (a node cut off or gone, its streams electing new ones), and the run
// would end with nobody told. One not stored even so is kept, and the
// sweep sends it again (sendUnsent).
func (s *Scheduler) emitEnd(ctx context.Context, subject, typ, msgID string, data any, set func(*bus.Event)) {
	msg, err := bus.EventMsg(subject, typ, s.cfg.Source, data, set)
	if err != nil {
		s.log.Warn("event", "type", typ, "err", err)
		return
	}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	if s.js == nil {
		if err := s.nc.PublishMsg(msg); err != nil {
			s.log.Warn("event", "type", typ, "err", err)
		}
		return
	}
	s.sendEnd(ctx, msgID, msg)
}

// sendEnd stores one end, or keeps it for the sweep.
func (s *Scheduler) sendEnd(ctx context.Context, msgID string, msg *nats.Msg) bool {
	_, err := bus.Publish(ctx, s.js, msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.unsent, msgID)
		return true
	}
	if s.unsent == nil {
		s.unsent = map[string]*nats.Msg{}
	}
	if _, kept := s.unsent[msgID]; !kept && len(s.unsent) >= maxUnsent {
		s.log.Error("event not stored, and too many waiting to be sent again: dropped", "subject", msg.Subject, "id", msgID, "err", err)
		return false
	}
	if _, kept := s.unsent[msgID]; !kept {
		s.log.Warn("event not stored yet: the sweep sends it again", "subject", msg.Subject, "id", msgID, "err", err)
	}
	s.unsent[msgID] = msg
	return false
}

// sendUnsent sends again the ends not stored yet, until one fails.
func (s *Scheduler) sendUnsent(ctx context.Context) {
	s.mu.Lock()
	ids := slices.Collect(maps.Keys(s.unsent))
	s.mu.Unlock()
	for _, id := range ids {
		s.mu.Lock()
		msg := s.unsent[id]
		s.mu.Unlock()
		if msg == nil {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.Sweep)
		ok := s.sendEnd(pctx, id, msg)
		cancel()
		if !ok {
			return
		}
	}
}

// emit publishes a progress event; MESH_EVENTS stores it. Events are best
// effort: state in KV is the truth.
func (s *Scheduler) emit(subject, typ string, data any, set func(*bus.Event)) {
	if err := bus.Emit(s.nc, subject, typ, s.cfg.Source, data, set); err != nil {
		s.log.Warn("event", "type", typ, "err", err)
	}
}

// keyedMutex is a set of mutexes by key, dropped when unused.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
