package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/observe/metrics"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

func init() { register(newOrchestratorCmd) }

func newOrchestratorCmd(a *app) *cobra.Command {
	var (
		workers int
		ackWait time.Duration
		pipes   string
		verbose bool
		drain   time.Duration
		mf      metricsFlags
		lim     limitFlags
		bud     budgetFlags
		mem     memoryFlags
		deliver int
	)
	cmd := &cobra.Command{
		Use:   "orchestrator",
		Short: "Run one orchestrator replica until SIGTERM",
		Long: `Runs one stateless orchestrator replica: it takes chat requests and pipeline
submissions from MESH_REQUESTS and task results from MESH_RESULTS through
durable consumers shared by every replica, and keeps all state in KV. Start as
many as you like; killing one loses nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := mem.check(); err != nil {
				return err
			}
			pm, err := mf.start(a, procRole{running: "consumers", worker: true})
			if err != nil {
				return err
			}
			defer pm.Close()
			a.waitForServer()
			m, err := a.connect(ctx, "agentmesh orchestrator")
			if err != nil {
				return err
			}
			defer m.Close()
			pm.setConn(m.NC)
			log := a.logger(verbose)
			opts := []orchestrator.Option{
				orchestrator.WithNames(m.Names),
				orchestrator.WithWorkers(workers),
				orchestrator.WithAckWait(ackWait),
				orchestrator.WithLogger(log),
				orchestrator.WithObserver(schemas.Observers(telemetry.LogObserver(log), pm.Observer())),
				orchestrator.WithPipelinesDir(pipes),
				orchestrator.WithLimits(lim.limits()),
				orchestrator.WithMaxDeliver(deliver),
			}
			// Pipeline routers ask the configured LLM, if any; else they follow their rules.
			if model, err := textModelFromEnv(m); err != nil {
				return err
			} else if model != nil {
				opts = append(opts, orchestrator.WithModel(model))
			}
			if err := declareRateLimits(ctx, m.Res.LLM); err != nil {
				return err
			}
			copts, err := chatOptions(a, m, pm, bud)
			if err != nil {
				return err
			}
			mopts, err := mem.chatOptions(m)
			if err != nil {
				return err
			}
			copts = append(copts, mopts...)
			o, err := orchestrator.New(m.NC, append(opts, orchestrator.WithChat(copts...))...)
			if err != nil {
				return err
			}
			if err := pm.register(metrics.NewMeshCollector(o.Registry(), m.JS, m.Names)); err != nil {
				return err
			}
			errc := make(chan error, 1)
			go func() { errc <- o.RunReady(ctx, func() { pm.setRunning(); fmt.Fprintln(a.out, o.Ready()) }) }()
			return a.awaitDrain(ctx, "orchestrator", drain, errc)
		},
	}
	cmd.Flags().IntVar(&workers, "workers", 32, "events handled at once")
	cmd.Flags().DurationVar(&ackWait, "ack-wait", 5*time.Second, "how long a replica may hold a message before another replica gets it")
	cmd.Flags().StringVar(&pipes, "pipelines", "", "directory of the pipelines a step of kind pipeline runs by name (pipeline.name N: N.yaml there)")
	cmd.Flags().IntVar(&deliver, "max-deliver", orchestrator.DefaultMaxDeliver, "deliveries of a request before it is answered with code internal and dead-lettered")
	lim.register(cmd.Flags())
	bud.register(cmd.Flags())
	mem.register(cmd.Flags())
	drainFlag(cmd.Flags(), &drain)
	mf.register(cmd.Flags())
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log every warning and info line to stderr")
	return cmd
}

// limitFlags are the limits a submitted pipeline must keep within (see
// pipelinespec.Limits and docs/workflows.md#limits).
type limitFlags struct {
	specBytes, steps, depth, items, parallel, iterations, seedBytes int
}

func (l *limitFlags) register(f *pflag.FlagSet) {
	f.IntVar(&l.specBytes, "max-spec-bytes", pipelinespec.DefaultMaxSpecBytes, "largest pipeline spec, as JSON with its sub-pipelines, in bytes")
	f.IntVar(&l.steps, "max-pipeline-steps", pipelinespec.DefaultMaxSteps, "most steps of a pipeline, those of its sub-pipelines included")
	f.IntVar(&l.depth, "max-pipeline-depth", pipelinespec.MaxPipelineDepth, "how deep sub-pipelines may nest below a pipeline")
	f.IntVar(&l.items, "max-foreach-items", pipelinespec.MaxLoopItems, "most items of one for_each")
	f.IntVar(&l.parallel, "max-foreach-parallel", pipelinespec.MaxLoopParallel, "largest for_each.parallel")
	f.IntVar(&l.iterations, "max-repeat-iterations", pipelinespec.MaxLoopIterations, "largest repeat.max_iterations")
	f.IntVar(&l.seedBytes, "max-seed-value-bytes", pipelinespec.DefaultMaxSeedValueBytes, "largest seed value or variable, as JSON, in bytes")
}

func (l *limitFlags) limits() pipelinespec.Limits {
	return pipelinespec.Limits{SpecBytes: l.specBytes, Steps: l.steps, Depth: l.depth, ForEachItems: l.items,
		ForEachParallel: l.parallel, RepeatIterations: l.iterations, SeedValueBytes: l.seedBytes}
}
