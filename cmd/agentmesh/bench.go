package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
)

func init() { register(newBenchCmd) }

func newBenchCmd(a *app) *cobra.Command {
	var only string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the benchmark suite, side by side with raw NATS baselines",
		Long: `bench measures the mesh against the plain way of doing the same thing on the
same server in the same run, and prints the ratio (mesh time over baseline
time; lower is better):

  codec round trip     the CloudEvents codec vs sdk-go structured JSON
  task round trip      a no-op task through MESH_TASKS and back vs core request-reply
  direct call          a no-op task to the agent's micro endpoint (mesh.call.<agent>)
                       vs core request-reply of the same event
  object store         resolver Store/Open vs nats.go ObjectStore Put/Get (1 MiB)

Without --nats it starts an embedded server in a temporary directory. The
machine's other load shows in the figures: compare ratios, not absolutes.
Deeper benchmarks (pipelines, throughput) run with 'go test -bench . ./...'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if a.natsURL == "" || !cmd.Flag("nats").Changed {
				dir, err := os.MkdirTemp("", "agentmesh-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: dir})
				if err != nil {
					return err
				}
				defer srv.Shutdown()
				a.natsURL = srv.URL()
			}
			m, err := a.connect(ctx, "agentmesh bench")
			if err != nil {
				return err
			}
			defer m.Close()
			pairs, closer, err := benchsuite.Pairs(ctx, benchsuite.Env{NC: m.NC, JS: m.JS, Names: m.Names, Res: m.Res})
			if err != nil {
				return err
			}
			defer closer.Close()
			var results []benchsuite.Comparison
			for _, p := range pairs {
				if only != "" && !strings.Contains(strings.ToLower(p.Name), strings.ToLower(only)) {
					continue
				}
				if !a.jsonOut {
					fmt.Fprintf(a.errOut, "measuring %s ...\n", p.Name)
				}
				results = append(results, benchsuite.Measure(p))
			}
			if a.jsonOut {
				return a.printJSON(results)
			}
			benchsuite.Print(a.out, results)
			return nil
		},
	}
	cmd.Flags().StringVar(&only, "only", "", "run only the benchmarks whose name contains this text")
	return cmd
}
