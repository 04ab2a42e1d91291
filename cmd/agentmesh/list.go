package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() {
	register(newRunsCmd)
	register(newConversationsCmd)
}

// defaultListLimit is how many runs or conversations a list shows unless
// --limit says otherwise.
const defaultListLimit = 20

func newRunsCmd(a *app) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List pipeline runs, most recent first: status, steps, age",
		Long: `List the runs in the mesh_runs bucket, most recently updated first: id, name,
status, steps (completed/total, and failed or skipped ones), when it started and
how long it took, and for a fork the run and step it was forked from (FROM,
RUN@STEP). --limit 0 lists them all; --json prints the same as objects.
'agentmesh state show ID' shows one run whole.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listState(cmd.Context(), "agentmesh runs", limit, func(ctx context.Context, s *stateview.View) error {
				runs, total, err := s.RecentRuns(ctx, limit)
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(runs)
				}
				if total == 0 {
					fmt.Fprintln(a.out, "no runs yet: submit one with 'agentmesh run FILE'")
					return nil
				}
				tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RUN\tNAME\tSTATUS\tSTEPS\tSTARTED\tTOOK\tFROM")
				for _, r := range runs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, orDash(r.Name), r.Status, stepCounts(r), ago(r.CreatedAt), took(r.CreatedAt, r.FinishedAt), originOf(r.Origin))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				moreLine(a, len(runs), total, "runs")
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", defaultListLimit, "list at most this many (0: all)")
	return cmd
}

func newConversationsCmd(a *app) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "conversations",
		Short: "List chat conversations, most recent first: turns, slots, age, last message",
		Long: `List the conversations in the mesh_conversations bucket, most recently updated
first: id, turns, filled slots, when it started and was last updated, and the
last message. --limit 0 lists them all; --json prints the same as objects.
Continue one with 'agentmesh chat --conversation ID'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listState(cmd.Context(), "agentmesh conversations", limit, func(ctx context.Context, s *stateview.View) error {
				convs, total, err := s.RecentConversations(ctx, limit)
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(convs)
				}
				if total == 0 {
					fmt.Fprintln(a.out, "no conversations yet: start one with 'agentmesh chat MESSAGE'")
					return nil
				}
				tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CONVERSATION\tTURNS\tSLOTS\tSTARTED\tUPDATED\tLAST MESSAGE")
				for _, c := range convs {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", c.ID, c.Turns, c.Slots, ago(c.CreatedAt), ago(c.UpdatedAt), orDash(c.LastMessage))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				moreLine(a, len(convs), total, "conversations")
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", defaultListLimit, "list at most this many (0: all)")
	return cmd
}

// listState connects and hands the state store to list.
func (a *app) listState(ctx context.Context, name string, limit int, list func(context.Context, *stateview.View) error) error {
	if limit < 0 {
		return usagef("--limit %d: give 0 (all) or a positive number", limit)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := a.connect(ctx, name)
	if err != nil {
		return err
	}
	defer m.Close()
	store, err := m.needStore()
	if err != nil {
		return err
	}
	return list(ctx, store)
}

// stepCounts says how far a run got: "2/3", plus failed and skipped steps.
func stepCounts(r stateview.RunSummary) string {
	s := fmt.Sprintf("%d/%d", r.Completed, r.Steps)
	if r.Failed > 0 {
		s += fmt.Sprintf(", %d failed", r.Failed)
	}
	if r.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", r.Skipped)
	}
	for _, id := range slices.Sorted(maps.Keys(r.Waiting)) {
		s += fmt.Sprintf(", %s waiting for %s", id, r.Waiting[id])
	}
	return s
}

// moreLine says how many were left out of a list, on stderr.
func moreLine(a *app, shown, total int, what string) {
	if total > shown {
		fmt.Fprintf(a.errOut, "showing the %d most recent of %d %s; --limit 0 lists them all\n", shown, total, what)
	}
}

// ago says how long ago t was, coarsely: "12s ago", "5m ago", "3h ago", "2d ago".
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// took is the time from start to end, or "-" while running.
func took(start, end time.Time) string {
	if end.IsZero() {
		return "-"
	}
	return end.Sub(start).Round(time.Millisecond).String()
}

// originOf is a forked run's origin as RUN@STEP; "-" for a run that was
// submitted.
func originOf(o *schemas.RunOrigin) string {
	if o == nil {
		return "-"
	}
	return o.Run + "@" + o.Step
}
