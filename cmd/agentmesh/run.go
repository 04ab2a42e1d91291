package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newRunCmd) }

// newRunCmd is the run command: long for its help text, flags and the
// follow loop, which read best in one place.
func newRunCmd(a *app) *cobra.Command {
	var (
		runID    string
		vars     []string
		budget   schemas.Budget
		from, at string
		params   []string
	)
	cmd := &cobra.Command{
		Use:   "run FILE | run --from RUN --at STEP",
		Short: "Submit a pipeline (YAML or JSON), or fork a run from a step, and follow it to the end",
		Long: `Submits the pipeline in FILE to the orchestrators (a JetStream publish: the
ack says it was accepted), then prints each step as it starts and ends until
the run ends, with what each completed step produced: text whole (up to 4000
characters), collections as counts and their first file names, categories and
folders as trees. With --json it writes JSON Lines instead: one event per line,
as 'agentmesh watch --json' does (see the README). The exit status is 0 when
every step completed, 3 when the run was cancelled (a step failed with code
cancelled), 1 otherwise (a step skipped by its condition or a router does not
count as a failure).

--var name=value sets a workflow variable the file declares under vars
(repeat it for more); the value takes the type of the variable's default.
See docs/workflows.md.

--budget-tokens and --budget-usd set the run's budget (the spec's budget:),
replacing the file's: once the run's steps have spent it, no further step
starts and the run fails with code budget_exceeded (docs/llm.md#budgets).

--from RUN --at STEP forks run RUN instead of reading a FILE: a new run starts
from RUN's spec and state as they were before STEP. The steps that do not
depend on STEP keep the outputs RUN recorded and send no task; STEP and every
step after it run again, with the params --param STEP.NAME=VALUE changes (only
steps that run again) and the variables --var changes. The new run records its
origin ('agentmesh runs' and 'watch' show it); RUN does not change.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case from != "" && len(args) > 0:
				return usagef("run --from %s takes no FILE (a fork runs the original's spec); drop %q", from, args[0])
			case from != "" && at == "":
				return usagef("run --from %s: give --at STEP, the step to run again from ('agentmesh state show %s' lists its steps)", from, from)
			case from != "" && (cmd.Flags().Changed("budget-tokens") || cmd.Flags().Changed("budget-usd")):
				return usagef("run --from %s: a fork keeps the original's budget; --budget-tokens and --budget-usd are for a FILE", from)
			case from == "" && (at != "" || len(params) > 0):
				return usagef("--at and --param fork a run: give --from RUN too")
			case from == "" && len(args) != 1:
				return usagef("give FILE, the pipeline to run (or --from RUN --at STEP to fork a run); got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if from != "" {
				req, err := forkRequest(from, at, params, vars)
				if err != nil {
					return err
				}
				return a.followRun(cmd.Context(), runID, pipelinespec.PipelineSpec{}, func(ctx context.Context, m *mesh, id string) error {
					if _, err := client.SubmitFork(ctx, m.JS, m.Names, req, id, "agentmesh/cli"); err != nil {
						return err
					}
					if !a.jsonOut {
						fmt.Fprintf(a.out, "run %s: forked from run %s at step %s\n", id, from, at)
					}
					return nil
				})
			}
			spec, err := client.LoadPipeline(args[0])
			if err == nil {
				spec, err = client.SetVars(spec, vars)
			}
			if err == nil && (cmd.Flags().Changed("budget-tokens") || cmd.Flags().Changed("budget-usd")) {
				b := budget
				spec.Budget = &b
			}
			if err == nil {
				err = spec.Validate()
			}
			if err != nil {
				return exitError{code: 1, msg: oneLine(err.Error())}
			}
			if runID == "" {
				runID = strings.ReplaceAll(fmt.Sprintf("%s-%d", spec.Name, time.Now().UnixNano()), " ", "_")
				if bus.ValidateToken("run id", runID) != nil {
					runID = ""
				}
			}
			return a.followRun(cmd.Context(), runID, spec, func(ctx context.Context, m *mesh, id string) error {
				if _, err := client.SubmitPipeline(ctx, m.JS, m.Names, spec, id, "agentmesh/cli"); err != nil {
					return err
				}
				if !a.jsonOut {
					fmt.Fprintf(a.out, "run %s: submitted %q (%s)\n", id, spec.Name, schemas.Plural(len(spec.Steps), "step", "steps"))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&runID, "run-id", "", "name the run (default: the pipeline name and a timestamp)")
	cmd.Flags().StringArrayVar(&vars, "var", nil, "set a workflow variable: name=value (repeatable)")
	cmd.Flags().StringVar(&from, "from", "", "fork run RUN instead of reading a FILE (with --at)")
	cmd.Flags().StringVar(&at, "at", "", "with --from: the step to run again, with every step after it")
	cmd.Flags().StringArrayVar(&params, "param", nil, "with --from: change a param of a step that runs again: step.name=value (repeatable)")
	cmd.Flags().Int64Var(&budget.Tokens, "budget-tokens", 0, "the run's budget in tokens (replaces the spec's budget; 0: no limit)")
	cmd.Flags().Float64Var(&budget.USD, "budget-usd", 0, "the run's budget in US dollars (replaces the spec's budget; 0: no limit)")
	return cmd
}

// followRun connects, follows run runID's events from their start (so
// nothing is missed however fast the run goes), submits it with submit
// and prints its events until it ends. runID "" is replaced by
// run-<timestamp>. spec is the run's, when
// the command read it (its budget is reported at the end).
func (a *app) followRun(ctx context.Context, runID string, spec pipelinespec.PipelineSpec, submit func(ctx context.Context, m *mesh, runID string) error) error {
	m, err := a.connect(ctx, "agentmesh run")
	if err != nil {
		return err
	}
	defer m.Close()
	if runID == "" {
		runID = fmt.Sprintf("run-%d", time.Now().UnixNano())
	}
	events, stop, err := follow(ctx, m, runID)
	if err != nil {
		return err
	}
	defer stop()
	if err := submit(ctx, m, runID); err != nil {
		return err
	}
	p := newEventPrinter(ctx, a, m)
	for {
		select {
		case <-ctx.Done():
			return exitError{code: 130, msg: fmt.Sprintf("interrupted; the run goes on: agentmesh watch %s", runID)}
		case ev := <-events:
			p.print(ctx, ev)
			if ev.Type == bus.TypePipelineCompleted {
				p.drain(ctx, events)
				if spec.Budget != nil && !a.jsonOut {
					var re schemas.RunEvent
					_ = ev.DataAs(&re)
					fmt.Fprintf(a.out, "  budget: spent %d tokens and $%.4f of %s\n", re.Usage.Tokens.Prompt+re.Usage.Tokens.Completion, re.Usage.Cost, spec.Budget)
				}
				return p.runEnd(ev)
			}
		}
	}
}

// forkRequest is the fork run --from asks for: params step.name=value
// and vars name=value, their values strings the orchestrator reads as
// the original's values' types.
func forkRequest(from, at string, params, vars []string) (schemas.ForkRequest, error) {
	req := schemas.ForkRequest{From: from, At: at}
	for _, flag := range []struct {
		name string
		list []string
		to   *map[string]any
	}{{"param", params, &req.Params}, {"var", vars, &req.Vars}} {
		for _, kv := range flag.list {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return req, usagef("--%s %q: write name=value", flag.name, kv)
			}
			if *flag.to == nil {
				*flag.to = map[string]any{}
			}
			(*flag.to)[k] = v
		}
	}
	if err := req.Validate(); err != nil {
		return req, usageError{err}
	}
	return req, nil
}

// drainQuiet is how long run reads on after the run's end for events
// stored after it: a step's completed event can trail the run's end when
// the next wave's tasks went out ahead of it (docs/protocol.md).
const drainQuiet = 300 * time.Millisecond

// drain prints the run's events that arrive within drainQuiet of each
// other after its end, for at most two seconds.
func (p *eventPrinter) drain(ctx context.Context, events <-chan bus.Event) {
	limit := time.After(2 * time.Second)
	for {
		select {
		case ev := <-events:
			p.print(ctx, ev)
		case <-time.After(drainQuiet):
			return
		case <-limit:
			return
		case <-ctx.Done():
			return
		}
	}
}

// oneLine joins the lines of a multi-line error message with "; ".
func oneLine(msg string) string {
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// follow reads every event of a run or conversation from MESH_EVENTS with an
// ordered consumer, from the start.
func follow(ctx context.Context, m *mesh, id string) (<-chan bus.Event, func(), error) {
	return client.Follow(ctx, m.JS, m.Names, m.Names.EventsOf(id), false)
}

// eventPrinter prints the events of a run or conversation for run and
// watch: readable lines, or JSON Lines with --json. A completed step's
// outputs are read from its record in KV and shown with printViews (in
// JSON, as "views").
type eventPrinter struct {
	a     *app
	store *stateview.View
	v     *viewer
	// cancelled: a step of the run failed with code cancelled, so a run
	// stored before the cancelled status, which says failed, was
	// cancelled and is shown as such.
	cancelled bool
}

// runCancelled is how run and watch show a cancelled run: its status, or
// for a run stored before that status, a failed run one of whose steps a
// cancel request stopped.
const runCancelled = schemas.RunCancelled

// runStatus is the status to show for a run that ended as re says.
func (p *eventPrinter) runStatus(re schemas.RunEvent) string {
	if re.Status == schemas.RunCancelled || (re.Status == schemas.RunFailed && p.cancelled) {
		return runCancelled
	}
	return re.Status
}

func newEventPrinter(ctx context.Context, a *app, m *mesh) *eventPrinter {
	return &eventPrinter{a: a, store: m.store(), v: newViewer(ctx, m)}
}

func (p *eventPrinter) print(ctx context.Context, ev bus.Event) {
	var se schemas.StepEvent
	if strings.HasPrefix(ev.Type, bus.TypePipelineStepPrefix) && ev.DataAs(&se) == nil &&
		se.Status == schemas.StepFailed && se.Code == schemas.CodeCancelled {
		p.cancelled = true
	}
	views := p.stepViews(ctx, ev)
	var chatResp schemas.ChatResponse
	switch {
	case p.a.jsonOut:
		_ = p.a.jsonLine(withViews(eventJSON(ev), views))
	case ev.Type == bus.TypePipelineCompleted:
		printRunEnd(p.a.out, ev, p.cancelled)
	case ev.Type == bus.TypeChatResponded && ev.DataAs(&chatResp) == nil:
		printTurn(p.a.out, ev.Time.Format("15:04:05.000"), chatResp)
	case strings.HasPrefix(ev.Type, "io.agentmesh.pipeline."):
		printPipelineEvent(p.a.out, ev)
		printViews(p.a.out, "      ", views)
	default:
		fmt.Fprintf(p.a.out, "%s %s %s\n", ev.Time.Format("15:04:05.000"), strings.TrimPrefix(ev.Type, "io.agentmesh."), ev.Data)
	}
}

// stepViews returns the views of a completed step's outputs, read from the
// step's record (written before the event; a short wait covers a record
// still in flight). Other events have none.
func (p *eventPrinter) stepViews(ctx context.Context, ev bus.Event) []valueView {
	if ev.Type != bus.TypeStepCompleted || p.store == nil {
		return nil
	}
	var se schemas.StepEvent
	if ev.DataAs(&se) != nil || len(se.Outputs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for {
		rec, err := p.store.StepRecord(ctx, se.RunID, se.Step)
		if err == nil {
			return p.v.views(rec.Outputs)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// printRunEnd prints a run's end; cancelled says one of its steps was
// cancelled, so a failed run shows as cancelled.
func printRunEnd(w io.Writer, ev bus.Event, cancelled bool) {
	var re schemas.RunEvent
	_ = ev.DataAs(&re)
	p := eventPrinter{cancelled: cancelled}
	fmt.Fprintf(w, "run %s %s: %d completed, %d failed, %d skipped in %s\n", re.RunID, p.runStatus(re),
		re.Completed, re.Failed, re.Skipped, time.Duration(re.DurationMS)*time.Millisecond)
	fmt.Fprintf(w, "  totals: %s\n", usageLine(re.Usage))
	if re.Origin != nil {
		fmt.Fprintf(w, "  forked from run %s at step %s\n", re.Origin.Run, re.Origin.Step)
	}
}

func printPipelineEvent(w io.Writer, ev bus.Event) {
	if ev.Type == bus.TypePipelineCompleted {
		printRunEnd(w, ev, false)
		return
	}
	if ev.Type == bus.TypeResolveRefused {
		var rr pipelinespec.ResolveRefusal
		_ = ev.DataAs(&rr)
		fmt.Fprintf(w, "  resolution of step %s refused (%s): %s\n", rr.Step, rr.Code, rr.Error)
		return
	}
	if !strings.HasPrefix(ev.Type, bus.TypePipelineStepPrefix) {
		fmt.Fprintf(w, "  %s %s\n", ev.Type, ev.Data)
		return
	}
	var se schemas.StepEvent
	if err := ev.DataAs(&se); err != nil {
		return
	}
	who := se.Agent
	if who == "" && se.Kind != "" {
		who = "(" + se.Kind + ")"
	}
	line := fmt.Sprintf("  wave %d  %-12s %-20s %s", se.Wave+1, se.Step, who, se.Status)
	switch se.Status {
	case schemas.StepCompleted:
		if se.From != "" {
			line += fmt.Sprintf(" (kept from run %s, no task)", se.From)
		} else {
			line += fmt.Sprintf(" in %s", time.Duration(se.DurationMS)*time.Millisecond)
		}
		if se.Tokens != (schemas.Tokens{}) || se.Cost > 0 {
			line += fmt.Sprintf(" (%d+%d tokens, $%.4f)", se.Tokens.Prompt, se.Tokens.Completion, se.Cost)
		}
		if se.Summary != "" {
			line += ": " + se.Summary
		}
		for _, name := range slices.Sorted(maps.Keys(se.Outputs)) {
			o := se.Outputs[name]
			line += fmt.Sprintf(" [%s %s", name, o.DataType)
			if o.Count > 0 {
				line += fmt.Sprintf(" x%d", o.Count)
			}
			line += "]"
		}
	case schemas.StepFailed:
		line += ": " + se.Error
	case schemas.StepSkipped:
		line += ": " + se.Reason
	case schemas.StepWaiting:
		line += ": " + se.Reason + resolveHint(se)
	case schemas.StepRunning:
		if se.Reason != "" { // a loop's progress, a sub-pipeline's child run
			line += ": " + se.Reason
		}
	}
	fmt.Fprintln(w, line)
}

// eventJSON is an event as printed by --json.
func eventJSON(ev bus.Event) map[string]any {
	out := map[string]any{"id": ev.ID, "type": ev.Type, "source": ev.Source, "time": ev.Time}
	for k, v := range ev.Extensions {
		out[k] = v
	}
	if len(ev.Data) > 0 {
		out["data"] = rawJSON(ev.Data)
	}
	return out
}

type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 || !jsonValid(r) {
		return jsonString(string(r)), nil
	}
	return r, nil
}
