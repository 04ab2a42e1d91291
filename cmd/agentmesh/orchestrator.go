package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/observe/metrics"
	"github.com/agentmesh/agentmesh/orchestrator"
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
			}
			// Pipeline routers ask the configured LLM, if any; else they follow their rules.
			if model, err := textModelFromEnv(); err != nil {
				return err
			} else if model != nil {
				opts = append(opts, orchestrator.WithModel(model))
			}
			o, err := orchestrator.New(m.NC, opts...)
			if err != nil {
				return err
			}
			if err := chatHandler(a, o); err != nil {
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
	drainFlag(cmd.Flags(), &drain)
	mf.register(cmd.Flags())
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log every warning and info line to stderr")
	return cmd
}
