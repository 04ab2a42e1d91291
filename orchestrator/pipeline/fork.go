package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/pipespec"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// A fork (schemas.ForkRequest) is a new run made from an earlier one: the
// same spec, with the params of the steps that run again and the vars
// changed as asked. Its spec records its origin and the steps it keeps:
// those that do not depend on the fork's step (directly or through other
// steps) and completed in the original. A kept step goes through its
// wave as every step does, but as its wave starts the original's record
// is copied into the fork (its From set, its usage zero: the fork spent
// nothing on it) instead of a task going out, so its outputs are routed
// into the fork's slots as the original's were. The original is only
// read.

// Fork starts the run a fork request asks for (see ForkRequest). A request
// that cannot be served (no such run or step, a change to what a kept step
// ran with, another client's run) is refused with a failed
// io.agentmesh.pipeline.completed on the new run's events, touching no
// state; a fork whose spec no longer validates (an agent gone) is stored
// as a failed run, as a submission is.
func (s *Scheduler) Fork(ctx context.Context, ev bus.Event) error {
	runID := ev.Ext(bus.ExtRunID)
	if runID == "" {
		runID = ev.ID
	}
	if err := bus.ValidateToken("run id", runID); err != nil {
		return s.Reject(ctx, fmt.Errorf("%w; the refusal is on the request's event id", err), ev.ID)
	}
	var req schemas.ForkRequest
	if err := bus.DecodeData(ev, &req, func(b []byte) error { return schemas.ValidateJSON(schemas.SchemaFork, b) }); err != nil {
		return s.Reject(ctx, fmt.Errorf("%w: the request does not decode: %v", ErrBadFork, err), runID, ev.ID)
	}
	if err := req.Validate(); err != nil {
		return s.Reject(ctx, fmt.Errorf("%w: %w", ErrBadFork, err), runID, ev.ID)
	}
	if bus.ValidateToken("run id", req.From) != nil {
		return s.Reject(ctx, fmt.Errorf("%w: run %q to fork: not a run id", ErrNoOrigin, req.From), runID, ev.ID)
	}
	orig, err := s.store.Spec(ctx, req.From)
	if errors.Is(err, state.ErrNotFound) {
		return s.Reject(ctx, fmt.Errorf("%w: there is no run %q; check the id with agentmesh runs", ErrNoOrigin, req.From), runID, ev.ID)
	}
	if err != nil {
		return err
	}
	if c := bus.Requester(ctx); c != "" && c != orig.Owner {
		return s.Reject(ctx, schemas.WithCode(schemas.CodeForbidden, fmt.Errorf("%w: run %s was not submitted by client %s: only the client that submitted a run (or admin) may fork it",
			ErrNotOwner, req.From, c)), runID, ev.ID)
	}
	spec, down, err := forkSpec(orig.Spec, req)
	if err != nil {
		return s.Reject(ctx, err, runID, ev.ID)
	}
	var kept []string
	for _, step := range spec.Steps {
		if down[step.ID] {
			continue
		}
		rec, err := s.store.StepRecord(ctx, req.From, step.ID)
		switch {
		case err == nil && rec.Status == schemas.StepCompleted:
			kept = append(kept, step.ID)
		case err != nil && !errors.Is(err, state.ErrNotFound):
			return err
		}
		// A step that did not complete in the original runs again.
	}
	contracts, waves, verr := ValidateWithin(spec, s.lookup, s.router, s.cfg.Limits)
	if verr == nil && s.cfg.Model == nil {
		verr = needsModel(spec)
	}
	return s.create(ctx, ev, &state.RunSpec{ID: runID, Spec: spec, Contracts: contracts, Waves: waves,
		Origin: &schemas.RunOrigin{Run: req.From, Step: req.At}, Kept: kept}, verr)
}

// forkSpec returns the spec of a fork of a run whose spec is orig, and
// the steps that run again (req.At and every step that depends on it):
// orig with req's vars and params set. Every problem is reported at once.
func forkSpec(orig pipelinespec.PipelineSpec, req schemas.ForkRequest) (pipelinespec.PipelineSpec, map[string]bool, error) {
	ids := make([]string, 0, len(orig.Steps))
	for _, st := range orig.Steps {
		ids = append(ids, st.ID)
	}
	if !slices.Contains(ids, req.At) {
		return orig, nil, fmt.Errorf("%w: run %s has no step %q (its steps: %s)", ErrBadFork, req.From, req.At, strings.Join(ids, ", "))
	}
	down := dependents(orig, req.At)
	spec := orig
	spec.Steps = slices.Clone(orig.Steps)
	var errs []error
	if len(req.Vars) > 0 {
		spec.Vars = maps.Clone(orig.Vars)
	}
	for _, name := range slices.Sorted(maps.Keys(req.Vars)) {
		def, ok := orig.Vars[name]
		if !ok {
			errs = append(errs, fmt.Errorf("var %q: pipeline %q declares no such variable (its vars: %s)", name, orig.Name, orNone(slices.Sorted(maps.Keys(orig.Vars)))))
			continue
		}
		v, err := valueLike(def, req.Vars[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("var %s: %w", name, err))
			continue
		}
		if reflect.DeepEqual(v, def) {
			continue
		}
		spec.Vars[name] = v
		for _, st := range orig.Steps {
			if !down[st.ID] && readsVar(st, name) {
				errs = append(errs, fmt.Errorf("var %q: step %q reads it and keeps its outputs in a fork at %q: fork at %q (or a step before it) to change it", name, st.ID, req.At, st.ID))
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(req.Params)) {
		id, param, _ := strings.Cut(key, ".")
		i := slices.Index(ids, id)
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("param %q: run %s has no step %q (its steps: %s)", key, req.From, id, strings.Join(ids, ", ")))
			continue
		case !down[id]:
			errs = append(errs, fmt.Errorf("param %q: step %q does not depend on %q and keeps its outputs: fork at %q to change its params", key, id, req.At, id))
			continue
		}
		v := req.Params[key]
		if def, ok := orig.Steps[i].Params[param]; ok {
			var err error
			if v, err = valueLike(def, v); err != nil {
				errs = append(errs, fmt.Errorf("param %q: %w", key, err))
				continue
			}
		}
		params := maps.Clone(spec.Steps[i].Params)
		if params == nil {
			params = map[string]any{}
		}
		params[param] = v
		spec.Steps[i].Params = params
	}
	if len(errs) > 0 {
		return orig, nil, fmt.Errorf("%w of run %s at %q: %w", ErrBadFork, req.From, req.At, errors.Join(errs...))
	}
	return spec, down, nil
}

// valueLike is v, or, when v is a string and def is not, v parsed as a
// value of def's type (a --param or --var given on the command line).
func valueLike(def, v any) (any, error) {
	raw, ok := v.(string)
	if _, defString := def.(string); !ok || defString || def == nil {
		return v, nil
	}
	return pipespec.ValueLike(def, raw)
}

// readsVar reports whether step st may read workflow variable name (in its
// params, condition or rules).
func readsVar(st pipelinespec.PipelineStep, name string) bool {
	b, err := json.Marshal(st)
	return err != nil || strings.Contains(string(b), "vars."+name)
}

// dependents returns step at and every step of spec that depends on it,
// directly or through others.
func dependents(spec pipelinespec.PipelineSpec, at string) map[string]bool {
	down := map[string]bool{at: true}
	for grew := true; grew; {
		grew = false
		for _, st := range spec.Steps {
			if down[st.ID] {
				continue
			}
			if slices.ContainsFunc(st.DependsOn, func(d string) bool { return down[d] }) {
				down[st.ID], grew = true, true
			}
		}
	}
	return down
}

// keptRecord is the record of step st.id of a fork that keeps the
// original's (RunSpec.Kept): the fork's own when it was copied already,
// else a copy of the original's, which the caller records. When the
// original's record is gone (the run expired) the step fails, saying so.
func (s *Scheduler) keptRecord(ctx context.Context, st stepStart) (*state.StepState, error) {
	if rec, err := s.loadRecord(ctx, st.sd.ID, st.id); err == nil {
		return rec, nil
	}
	from := st.sd.Origin.Run
	orig, err := s.store.StepRecord(ctx, from, st.id)
	now := time.Now().UTC()
	if errors.Is(err, state.ErrNotFound) {
		return failedRecord(st.sd, st.h, st.id, schemas.CodeNotFound, fmt.Sprintf(
			"%s: the record of step %q in run %s, which this fork keeps, is gone (the run expired?): fork again at %q", schemas.CodeNotFound, st.id, from, st.id), now), nil
	}
	if err != nil {
		return nil, err // the sweep starts it again
	}
	rec := *orig
	rec.Wave, rec.From, rec.Metrics = waveOf(st.sd, st.id), from, schemas.Metrics{}
	rec.DispatchedAt, rec.FinishedAt, rec.Deadline = st.h.WaveStartedAt, now, time.Time{}
	return &rec, nil
}
