package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newApproveCmd); register(newInputCmd) }

func newApproveCmd(a *app) *cobra.Command {
	var (
		reject bool
		r      pipelinespec.Resolution
		wait   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "approve RUN STEP",
		Short: "Approve (or --reject) an approval step that waits for a person",
		Long: `Answers step STEP of run RUN, a step of kind approval that waits ('agentmesh runs'
and 'agentmesh state show RUN' show it as waiting), on mesh.pipeline.resolve; any orchestrator replica
applies it. Approved, the step completes and its dependants run; rejected
(--reject), it fails with code rejected and its dependants are skipped. It
waits up to --wait for the outcome and prints it; the exit status is 0 when
the answer was applied, 1 when it was refused (the step does not wait, or
the run does not exist: code not_waiting).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.RunID, r.Step, r.Decision = args[0], args[1], pipelinespec.DecisionApprove
			if reject {
				r.Decision = pipelinespec.DecisionReject
			}
			return resolveStep(cmd, a, r, wait)
		},
	}
	cmd.Flags().BoolVar(&reject, "reject", false, "reject instead of approving")
	cmd.Flags().StringVar(&r.Comment, "comment", "", "a comment kept in the step's record and events")
	cmd.Flags().StringVar(&r.By, "by", defaultBy(), "who answers, for the record")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the outcome")
	return cmd
}

func newInputCmd(a *app) *cobra.Command {
	var (
		asJSON bool
		r      pipelinespec.Resolution
		wait   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "input RUN STEP VALUE",
		Short: "Give the value an input step waits for",
		Long: `Answers step STEP of run RUN, a step of kind input that waits, with VALUE: text
for a TEXT step, or with --json a JSON value of the step's data type, checked
against its schema (a value that fails is refused with code invalid_input,
and the step keeps waiting). The value becomes the step's output "value" and
its dependants run. Exit status 0 when applied, 1 when refused.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.RunID, r.Step, r.Value = args[0], args[1], args[2]
			if asJSON {
				var v any
				if err := json.Unmarshal([]byte(args[2]), &v); err != nil {
					return exitError{code: 2, msg: fmt.Sprintf("VALUE %q is not JSON (%v); quote it as JSON or drop --json for text", args[2], err)}
				}
				r.Value = v
			}
			return resolveStep(cmd, a, r, wait)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "VALUE is JSON (for a data type other than TEXT)")
	cmd.Flags().StringVar(&r.Comment, "comment", "", "a comment kept in the step's record and events")
	cmd.Flags().StringVar(&r.By, "by", defaultBy(), "who answers, for the record")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the outcome")
	return cmd
}

func defaultBy() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

// resolveStep sends r and waits for its outcome: the step's completed or
// failed event, or the refusal naming the request.
func resolveStep(cmd *cobra.Command, a *app, r pipelinespec.Resolution, wait time.Duration) error {
	if err := bus.ValidateToken("run id", r.RunID); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	ctx := cmd.Context()
	m, err := a.connect(ctx, "agentmesh "+cmd.Name())
	if err != nil {
		return err
	}
	defer m.Close()
	events, stop, err := client.Follow(ctx, m.JS, m.Names, m.Names.EventsOf(r.RunID), true) // owned or not: the step's events are the owner's, a refusal the sender's
	if err != nil {
		return err
	}
	defer stop()
	id, err := client.ResolveStep(ctx, m.JS, m.Names, r, "agentmesh/cli")
	if err != nil {
		return err
	}
	timeout := time.After(wait)
	for {
		select {
		case <-ctx.Done():
			return exitError{code: 130, msg: "interrupted; the answer was sent"}
		case <-timeout:
			return exitError{code: 1, msg: fmt.Sprintf("no outcome within %s; the answer was sent (event %s): agentmesh watch %s", wait, id, r.RunID)}
		case ev := <-events:
			switch ev.Type {
			case bus.TypeResolveRefused:
				var rr pipelinespec.ResolveRefusal
				if ev.DataAs(&rr) == nil && rr.Request == id {
					if a.jsonOut {
						_ = a.jsonLine(eventJSON(ev))
					}
					return exitError{code: 1, msg: fmt.Sprintf("refused (%s): %s", rr.Code, rr.Error)}
				}
			case bus.TypeStepCompleted, bus.TypeStepFailed:
				var se schemas.StepEvent
				if ev.DataAs(&se) == nil && se.Step == r.Step {
					if a.jsonOut {
						return a.jsonLine(eventJSON(ev))
					}
					printPipelineEvent(a.out, ev)
					return nil
				}
			}
		}
	}
}

// resolveHint says how to answer a step that waits.
func resolveHint(se schemas.StepEvent) string {
	if len(se.Reason) >= 5 && se.Reason[:5] == "input" {
		return fmt.Sprintf(" (agentmesh input %s %s VALUE)", se.RunID, se.Step)
	}
	return fmt.Sprintf(" (agentmesh approve %s %s [--reject])", se.RunID, se.Step)
}
