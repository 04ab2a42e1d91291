package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
)

func init() { register(newWatchCmd) }

func newWatchCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "watch ID",
		Short: "Tail the events of a run or conversation, from its start, until Ctrl-C",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if err := bus.ValidateToken("id", id); err != nil {
				return err
			}
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh watch")
			if err != nil {
				return err
			}
			defer m.Close()
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
				}
			}
		},
	}
}

func jsonValid(b []byte) bool { return json.Valid(b) }

func jsonString(s string) []byte { b, _ := json.Marshal(s); return b }
