package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newAgentsCmd) }

func newAgentsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "agents",
		Short: "List live agents: name, capability, inputs -> outputs, instances",
		Long: `List the agents that are live in the registry (the mesh_agents bucket): name,
capability, typed inputs and outputs (name:DATA_TYPE/content-hint, * = required)
and the number of running instances. --json prints the contracts and instances.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			m, err := a.connect(ctx, "agentmesh agents")
			if err != nil {
				return err
			}
			defer m.Close()
			var (
				mu      sync.Mutex
				refused []client.Refusal // announcements the registry left out
			)
			reg, err := client.NewRegistry(ctx, m.Res.Agents, client.OnRefused(func(r client.Refusal) {
				mu.Lock()
				refused = append(refused, r)
				mu.Unlock()
			}))
			if err != nil {
				return err
			}
			defer reg.Stop()
			list := reg.Agents()
			mu.Lock()
			for _, r := range refused {
				fmt.Fprintf(a.errOut, "left out %s: %v\n", r.Key, r.Err)
			}
			mu.Unlock()
			if a.jsonOut {
				return a.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.out, "no live agents: start one with 'agentmesh agent NAME' (built-in: "+strings.Join(builtinNames(), ", ")+")")
				return nil
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCAPABILITY\tINPUTS → OUTPUTS\tINSTANCES")
			for _, ag := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", ag.Contract.Name, ag.Contract.Capability, signature(ag.Contract), len(ag.Instances))
			}
			return tw.Flush()
		},
	}
}

// signature renders a contract's typed inputs and outputs, e.g.
// images:FILE_IDS/images* → categories:CATEGORIZATION.
func signature(c schemas.AgentContract) string {
	var in, out []string
	for _, i := range c.Inputs {
		s := i.Name + ":" + i.DataType
		if i.ContentTypeHint != "" {
			s += "/" + i.ContentTypeHint
		}
		if i.Required {
			s += "*"
		}
		in = append(in, s)
	}
	for _, o := range c.Outputs {
		s := o.Name + ":" + o.DataType
		if o.ContentTypeHint != "" {
			s += "/" + o.ContentTypeHint
		}
		out = append(out, s)
	}
	left, right := strings.Join(in, ", "), strings.Join(out, ", ")
	if left == "" {
		left = "-"
	}
	if right == "" {
		right = "-"
	}
	return left + " → " + right
}
