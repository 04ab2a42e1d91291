package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/eval"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// evalSpecs loads the pipeline of every pipeline case of set (a file's
// path is relative to dir, the eval set's folder), with the case's vars
// set, and reports every case whose pipeline cannot run at once.
func evalSpecs(set eval.Set, dir string) (map[string]pipelinespec.PipelineSpec, error) {
	specs := map[string]pipelinespec.PipelineSpec{}
	var errs []error
	for _, c := range set.Cases {
		if c.Pipeline.IsZero() {
			continue
		}
		spec, err := evalSpec(c, dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("case %q: %w", c.Name, err))
			continue
		}
		specs[c.Name] = spec
	}
	return specs, errors.Join(errs...)
}

func evalSpec(c eval.Case, dir string) (pipelinespec.PipelineSpec, error) {
	var spec pipelinespec.PipelineSpec
	var err error
	if c.Pipeline.File != "" {
		path := c.Pipeline.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		spec, err = client.LoadPipeline(path)
	} else {
		spec, err = client.ParsePipeline(c.Pipeline.Inline, "yaml")
	}
	if err != nil {
		return spec, err
	}
	var assign []string
	for _, k := range slices.Sorted(maps.Keys(c.Vars)) {
		assign = append(assign, fmt.Sprintf("%s=%v", k, c.Vars[k]))
	}
	if spec, err = client.SetVars(spec, assign); err != nil {
		return spec, err
	}
	return spec, spec.Validate()
}

// evalPipeline runs spec once as a run of its own, follows it to its end
// and returns what it showed: its status, code and usage, the steps that
// sent a task (in the order they did, with their spec's params) and every
// step's outputs, read from the run's state.
func (a *app) evalPipeline(ctx context.Context, m *mesh, name string, spec pipelinespec.PipelineSpec) (eval.Outcome, error) {
	var o eval.Outcome
	store := m.store()
	if store == nil {
		return o, errors.New("these credentials cannot read runs' state, so a pipeline's outputs cannot be checked; use credentials of an operator")
	}
	runID := fmt.Sprintf("eval-%d", time.Now().UnixNano())
	events, stop, err := follow(ctx, m, runID)
	if err != nil {
		return o, err
	}
	defer stop()
	if _, err := client.SubmitPipeline(ctx, m.JS, m.Names, spec, runID, "agentmesh/eval"); err != nil {
		return o, fmt.Errorf("submitting the pipeline of %q: %w", name, err)
	}
	var re schemas.RunEvent
	for re.Status == "" {
		select {
		case <-ctx.Done():
			return o, fmt.Errorf("run %s did not end: %w", runID, ctx.Err())
		case ev := <-events:
			if ev.Type != bus.TypePipelineCompleted {
				continue
			}
			if err := ev.DataAs(&re); err != nil {
				return o, fmt.Errorf("run %s ended with an event that does not decode: %w", runID, err)
			}
		}
	}
	run, err := store.Run(ctx, runID)
	if err != nil {
		return o, fmt.Errorf("reading run %s: %w", runID, err)
	}
	o = eval.Outcome{State: re.Status, Code: re.Code, Error: re.Error, Cost: re.Cost,
		Duration: time.Duration(re.DurationMS) * time.Millisecond, Outputs: map[string]schemas.TypedValue{}}
	var started []*stateview.StepState
	for _, st := range run.Steps {
		for out, v := range st.Outputs {
			o.Outputs[st.ID+"."+out] = v
		}
		if st.Status != schemas.StepSkipped && st.TaskID != "" && st.From == "" {
			started = append(started, st)
		}
	}
	slices.SortFunc(started, func(x, y *stateview.StepState) int {
		if x.Wave != y.Wave {
			return x.Wave - y.Wave
		}
		if c := x.DispatchedAt.Compare(y.DispatchedAt); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	params := map[string]map[string]any{}
	for _, st := range run.Spec.Steps {
		params[st.ID] = st.Params
	}
	for _, st := range started {
		o.Calls = append(o.Calls, eval.Call{Agent: st.Agent, Step: st.ID, Params: params[st.ID]})
	}
	return o, nil
}
