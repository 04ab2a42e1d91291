package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
)

func init() { register(newServerCmd) }

func newServerCmd(a *app) *cobra.Command {
	var opts bus.EmbeddedOptions
	var (
		provision bool
		mf        metricsFlags
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the embedded NATS server alone (JetStream on)",
		Long: `server runs a NATS server with JetStream in this process, storing its data
under --store, until Ctrl-C. With --provision it also creates the mesh's
streams, buckets and object store (every other process creates them too,
idempotently, so this is optional).

--nats-http-port serves the server's own monitoring endpoint (/varz, /jsz,
/connz, /healthz), the one prometheus-nats-exporter and the nats CLI read;
--metrics-addr serves this process's /metrics, /healthz and /readyz.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := filepath.Abs(opts.StoreDir)
			if err != nil {
				return err
			}
			opts.StoreDir = store
			pm, err := mf.start(a, procRole{running: "nats-server"})
			if err != nil {
				return err
			}
			defer pm.Close()
			srv, err := bus.StartEmbedded(opts)
			if err != nil {
				return err
			}
			defer srv.Shutdown()
			pm.setRunning()
			printMonitor(a.out, srv)
			if provision {
				a.natsURL = srv.URL()
				a.owner = true
				m, err := a.connect(cmd.Context(), "agentmesh server")
				if err != nil {
					return err
				}
				m.Close()
			}
			fmt.Fprintf(a.out, "NATS with JetStream listening on %s (data in %s); Ctrl-C stops it\n", srv.URL(), store)
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.StoreDir, "store", ".agentmesh", "JetStream data directory")
	f.StringVar(&opts.Host, "host", "127.0.0.1", "listen address")
	f.IntVar(&opts.Port, "port", 4222, "listen port (0 picks a free one)")
	f.BoolVar(&provision, "provision", false, "create the mesh's streams, buckets and object store")
	natsHTTPPortFlag(f, &opts.HTTPPort)
	mf.register(f)
	return cmd
}
