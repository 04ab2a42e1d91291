package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newWatchCmd) }

func newWatchCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "watch ID",
		Short: "Print the events of a run or conversation from its start; for a run, until it ends",
		Long: `watch prints the events of run or conversation ID from its start (with --json
as JSON Lines, one event per line). For a run it ends when the run ends, as
'agentmesh run' does: exit status 0 when the run completed, 1 when it
failed, 3 when it was cancelled (a step failed with code cancelled, e.g. by
POST /api/runs/{id}/cancel). A run that has ended already is printed whole and
ends the same way. A conversation has no end: watch follows it until Ctrl-C.
An ID that is neither a run nor a conversation exits 1 at once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if err := bus.ValidateToken("id", id); err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh watch")
			if err != nil {
				return err
			}
			defer m.Close()
			if err := watchable(ctx, m, id); err != nil {
				return err
			}
			events, stop, err := follow(ctx, m, id)
			if err != nil {
				return err
			}
			defer stop()
			p := newEventPrinter(ctx, a, m)
			for {
				select {
				case <-ctx.Done():
					return nil
				case ev := <-events:
					p.print(ctx, ev)
					if ev.Type == bus.TypePipelineCompleted {
						p.drain(ctx, events)
						return p.runEnd(ev)
					}
				}
			}
		},
	}
}

// watchable refuses an id that is neither a run nor a conversation: from
// the state buckets when this identity may read them, else from the events
// stream (nothing stored under the id).
func watchable(ctx context.Context, m *mesh, id string) error {
	missing := exitError{code: exitFailure, msg: fmt.Sprintf("no run or conversation %q on this mesh (prefix %q); list them with 'agentmesh runs' and 'agentmesh conversations'",
		id, m.Names.Prefix())}
	if store := m.store(); store != nil {
		_, _, rerr := store.Header(ctx, id)
		if rerr == nil {
			return nil
		}
		_, cerr := store.ConversationState(ctx, id)
		if cerr == nil {
			return nil
		}
		if errors.Is(rerr, stateview.ErrNotFound) && errors.Is(cerr, stateview.ErrNotFound) {
			return missing
		}
		return errors.Join(rerr, cerr)
	}
	_, err := client.LastEvent(ctx, m.JS, m.Names, m.Names.EventsOf(id)) // a client's own events only
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return missing
	}
	return nil // found, or this identity may not look: follow it
}

// runEnd is the outcome of watch or run once the run's end event came:
// nil when it completed, exitCancelled when it was cancelled, else
// exitFailure.
func (p *eventPrinter) runEnd(ev bus.Event) error {
	var re schemas.RunEvent
	_ = ev.DataAs(&re)
	switch status := p.runStatus(re); status {
	case schemas.RunCompleted:
		return nil
	case runCancelled:
		return exitError{code: exitCancelled, msg: fmt.Sprintf("run %s cancelled: %s", re.RunID, oneLine(re.Error))}
	default:
		return exitError{code: exitFailure, msg: fmt.Sprintf("run %s %s: %s", re.RunID, status, oneLine(re.Error))}
	}
}

func jsonValid(b []byte) bool { return json.Valid(b) }

func jsonString(s string) []byte { b, _ := json.Marshal(s); return b }
