package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
			for {
				select {
				case <-ctx.Done():
					return nil
				case ev := <-events:
					switch {
					case a.jsonOut:
						_ = json.NewEncoder(a.out).Encode(eventJSON(ev))
					case strings.HasPrefix(ev.Type, "io.agentmesh.pipeline."):
						printPipelineEvent(a, ev)
					default:
						fmt.Fprintf(a.out, "%s %s %s\n", ev.Time.Format("15:04:05.000"), strings.TrimPrefix(ev.Type, "io.agentmesh."), ev.Data)
					}
				}
			}
		},
	}
}

func natsMsg(m jetstream.Msg) *nats.Msg {
	return &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
}

func jsonValid(b []byte) bool { return json.Valid(b) }

func jsonString(s string) []byte { b, _ := json.Marshal(s); return b }
