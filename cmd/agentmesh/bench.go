package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
)

func init() { register(newBenchCmd) }

// newBenchCmd is the bench command: long for its help text, which lists
// every scenario and reads best in one place.
func newBenchCmd(a *app) *cobra.Command {
	var (
		only   []string
		rounds int
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the benchmark suite, side by side with raw NATS baselines",
		Long: `bench measures the mesh against the plain way of doing the same thing on the
same server in the same run, and prints the ratio (mesh time over baseline
time; lower is better):

  task-round-trip       a no-op task through MESH_TASKS and back vs core request-reply
  direct-call           a no-op task to the agent's micro endpoint (mesh.call.<agent>)
                        vs core request-reply of the same event
  durable-hop           a structured task through TextAgent (MESH_TASKS, result on
                        mesh.result.TextAgent.<id>) vs the same hop written with
                        JetStream: a work-queue stream, a pull worker, a reply stream
  throughput            no-op tasks/s through 2 agent instances vs 2 hand-written
                        JetStream pull workers
  scale-sleep           tasks/s through 4 instances of an agent sleeping 10ms per task
                        vs 1 instance (THROUGHPUT RATIO is the scaling; target 3.5x)
  pipeline-chain100-outputs
                        a 100-step chain of an agent with an output, run by an
                        orchestrator, vs the same waves of tasks by hand (publish,
                        consume results, update a KV key)
  pipeline-wide10x100   10 chains of 100 no-op steps side by side, the same way
  objectstore-put-1MiB  resolver Store vs nats.go ObjectStore Put
  objectstore-get-1MiB  resolver Open vs nats.go ObjectStore Get

Each side runs --rounds times (default 3), alternating with the other, and each figure is the
median of its rounds. RATIO is the mesh's p50 over the baseline's (time per
operation where there is no p50; lower is better); THROUGHPUT RATIO is the
mesh's operations per second over the baseline's (higher is better).
Without --nats it starts an embedded server in a temporary directory. The
machine's other load shows in the figures: compare ratios, not absolutes.
The same scenarios run with 'go test -bench Suite ./internal/benchsuite/',
which also compares the CloudEvents codec with sdk-go (scenario codec; the
agentmesh binary does not link sdk-go).
docs/benchmarks.md explains the figures.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if rounds < 1 {
				return fmt.Errorf("--rounds %d: use 1 or more", rounds)
			}
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
			pairs, closer, err := benchsuite.Pairs(ctx, benchsuite.Env{NC: m.NC, JS: m.JS, Names: m.Names, Res: m.Res}, only...)
			if err != nil {
				return err
			}
			defer closer.Close()
			var results []benchsuite.Comparison
			for _, p := range pairs {
				if !a.jsonOut {
					fmt.Fprintf(a.errOut, "measuring %s ...\n", p.Name)
				}
				results = append(results, benchsuite.MeasureRounds(p, rounds))
			}
			if a.jsonOut {
				return a.printJSON(results)
			}
			benchsuite.Print(a.out, results)
			return nil
		},
	}
	cmd.Flags().IntVar(&rounds, "rounds", benchsuite.Rounds, "how many times each side runs, alternating; figures are the medians")
	cmd.Flags().StringSliceVar(&only, "only", nil, "run only the scenarios of these exact names, e.g. --only durable-hop,throughput")
	return cmd
}
