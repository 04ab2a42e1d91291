package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newStateCmd) }

func newStateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "state", Short: "Inspect conversation and run state"}
	cmd.AddCommand(&cobra.Command{
		Use:   "show ID",
		Short: "Print a conversation or a run: slots with type, hint, count and source; steps with status and timing",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh state")
			if err != nil {
				return err
			}
			defer m.Close()
			store, err := m.needStore()
			if err != nil {
				return err
			}
			id := args[0]
			run, rerr := store.Run(ctx, id)
			if rerr == nil {
				if a.jsonOut {
					return a.printJSON(run)
				}
				printRun(a.out, newViewer(ctx, m), run)
				return nil
			}
			conv, cerr := store.Conversation(ctx, id)
			if cerr == nil {
				if a.jsonOut {
					return a.printJSON(conv)
				}
				printConversation(a.out, newViewer(ctx, m), conv)
				return nil
			}
			if errors.Is(rerr, stateview.ErrNotFound) && errors.Is(cerr, stateview.ErrNotFound) {
				return exitError{code: 1, msg: fmt.Sprintf("no run or conversation %q in %s or %s; list them with 'agentmesh runs' and 'agentmesh conversations'",
					id, m.Names.RunsBucket(), m.Names.ConversationsBucket())}
			}
			return errors.Join(rerr, cerr)
		},
	})
	return cmd
}

// shownStatus is the status state show prints: the run's, and cancelled
// for a run stored before that status (it says failed) one of whose steps
// a cancel request stopped, as run and watch print it.
func shownStatus(r *stateview.RunState) string {
	if r.Status == schemas.RunFailed {
		for _, s := range r.Steps {
			if s != nil && s.Status == schemas.StepFailed && s.Code == schemas.CodeCancelled {
				return runCancelled
			}
		}
	}
	return r.Status
}

func printRun(w io.Writer, v *viewer, r *stateview.RunState) {
	fmt.Fprintf(w, "run %s  %q  %s\n", r.ID, r.Name, shownStatus(r))
	fmt.Fprintf(w, "  created %s", r.CreatedAt.Format(time.RFC3339))
	if !r.FinishedAt.IsZero() {
		fmt.Fprintf(w, ", took %s", r.FinishedAt.Sub(r.CreatedAt).Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	if o := r.Origin; o != nil {
		fmt.Fprintf(w, "  forked from run %s at step %s\n", o.Run, o.Step)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	printRunBudget(w, r)
	fmt.Fprintln(w, "steps:")
	for wi, wave := range r.Waves {
		for _, id := range wave {
			st := r.Steps[id]
			line := fmt.Sprintf("  wave %d  %-12s %-20s %-9s", wi+1, st.ID, st.Agent, st.Status)
			if !st.DispatchedAt.IsZero() {
				line += " started " + st.DispatchedAt.Format("15:04:05.000")
			}
			if !st.FinishedAt.IsZero() && !st.DispatchedAt.IsZero() {
				line += fmt.Sprintf(" took %s", st.FinishedAt.Sub(st.DispatchedAt).Round(time.Millisecond))
			}
			switch {
			case st.From != "":
				line += "  kept from run " + st.From + " (no task)"
			case st.Error != "":
				line += "  " + st.Error
			case st.Reason != "":
				line += "  " + st.Reason
			case st.Summary != "":
				line += "  " + st.Summary
			}
			fmt.Fprintln(w, line)
			printViews(w, "      ", v.views(st.Outputs))
		}
	}
	printSlots(w, v, r.State.Slots)
}

func printConversation(w io.Writer, v *viewer, c *schemas.ConversationState) {
	fmt.Fprintf(w, "conversation %s  %s, updated %s\n", c.ID, schemas.Plural(c.Turns, "turn", "turns"), c.UpdatedAt.Format(time.RFC3339))
	if o := c.Origin; o != nil {
		fmt.Fprintf(w, "  rewound from conversation %s before its turn %d\n", o.ConversationID, o.Turn)
	}
	printSlots(w, v, c.Slots)
	if len(c.History) > 0 {
		fmt.Fprintln(w, "history:")
		for _, h := range c.History {
			text := schemas.Clip(h.Text, 100)
			who := h.Kind
			if h.Agent != "" {
				who += " " + h.Agent
			}
			fmt.Fprintf(w, "  %s %-24s %s\n", h.At.Format("15:04:05"), who, text)
		}
	}
}

func printSlots(w io.Writer, v *viewer, slots map[string]schemas.TypedValue) {
	fmt.Fprintln(w, "slots:")
	if len(slots) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	names := make([]string, 0, len(slots))
	for n := range slots {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		tv := slots[n]
		desc := tv.DataType
		if tv.ContentTypeHint != "" {
			desc += "/" + tv.ContentTypeHint
		}
		if tv.DataType == schemas.TypeFileIDs {
			if fc, err := tv.Files(); err == nil {
				desc += fmt.Sprintf(" x%d", fc.Count())
				if fc.Spilled() {
					desc += " (spilled)"
				}
			}
		}
		fmt.Fprintf(w, "  %-24s %-28s from %s\n", n, desc, strings.TrimSpace(tv.Source))
		printViewBody(w, "    ", v.view(n, tv))
	}
}
