package main

import (
	"fmt"
	"path/filepath"

	"github.com/nats-io/nats.go"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus/embedded"
)

func init() { register(newServerCmd) }

// newServerCmd is the server command: long for its help text and flags
// (clustering, security, metrics), which read best in one place.
func newServerCmd(a *app) *cobra.Command {
	var opts embedded.Options
	var (
		provision bool
		mf        metricsFlags
		sf        secureFlags
		tf        tenantFlags
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the embedded NATS server alone (JetStream on)",
		Long: `server runs a NATS server with JetStream in this process, storing its data
under --store, until Ctrl-C. With --provision it also creates the mesh's
streams, buckets and object store (every other process creates them too,
idempotently, so this is optional).

Three servers form a JetStream cluster when each has a name of its own and
they share --cluster-name and route to each other:

  agentmesh server --name n1 --port 4222 --store d1 --cluster-name mesh \
    --cluster-listen 127.0.0.1:6222 --routes nats://127.0.0.1:6223,nats://127.0.0.1:6224
  (n2 and n3 alike, on their own ports and stores)

then provision once with three replicas (agentmesh --js-replicas 3 server
--provision ..., or any command with --js-replicas 3). Commands without
--js-replicas never lower the replicas of what exists.

--nats-http-port serves the server's own monitoring endpoint (/varz, /jsz,
/connz, /healthz), the one prometheus-nats-exporter and the nats CLI read;
--metrics-addr serves this process's /metrics, /healthz and /readyz.

The server applies the mesh's agent rollouts ('agentmesh rollout'): it
watches the mesh_rollouts bucket and sets each rollout's weighted subject
mapping in its account, and says so in applied.<name> of that bucket.

With --secure the server requires TLS and credentials: an operator, an
account and its signing key (NATS JWT), a CA and a server certificate for
127.0.0.1, localhost, this host and --host are made under STORE/secure on
first start and reused after. The server provisions the mesh itself (as
admin); 'agentmesh creds' issues credentials for agents, clients and the
orchestrator without a restart, and 'agentmesh creds revoke' withdraws them
(this process applies it). --max-connections, --max-store, --max-memory,
--max-streams and --max-consumers are the mesh account's quotas.

--tenant NAME[:quotas] adds a tenant: a NATS account of its own, signed by
the operator, holding a whole mesh (the server provisions its streams and
buckets in it) under its own quotas (store, memory, streams, consumers,
connections). Nothing of one tenant is addressable from another or from the
mesh account. Its identities come from 'agentmesh creds --tenant NAME'.
--share AGENT lets every tenant call that agent of the mesh account
directly (mesh.call.AGENT, '*' for all): it gets the task and answers, and
sees nothing else of the tenant. See docs/security.md.`,
		Example: `  agentmesh server --store /var/lib/agentmesh
  agentmesh server --secure --store .agentmesh
  agentmesh server --secure --max-connections 200 --max-store 20GiB
  agentmesh creds client alice --store .agentmesh > alice.creds
  agentmesh server --secure --tenant acme:store=20GiB,connections=100 --tenant globex --share TextAgent
  agentmesh creds --tenant acme client alice -o acme-alice.creds`,
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
			sec, err := a.secureServer(&opts, sf)
			if err != nil {
				return err
			}
			tenants, err := a.setTenants(sec, tf)
			if err != nil {
				return err
			}
			srv, err := embedded.Start(opts)
			if err != nil {
				return err
			}
			defer srv.Shutdown()
			pm.setRunning()
			printMonitor(a.out, srv)
			var own *nats.Conn // the server's own connection, if it has one
			if provision || sec != nil {
				a.natsURL = dialURL(srv.URL())
				a.owner = true
				m, err := a.connect(cmd.Context(), "agentmesh server")
				if err != nil {
					return err
				}
				if sec == nil {
					m.Close()
				} else {
					if err := provisionIssuedClientFiles(cmd.Context(), m, sec); err != nil {
						m.Close()
						return err
					}
					// The server's own connection, the one it counts
					// against --max-connections, answers revocations
					// and follows rollouts.
					defer m.Close()
					if err := a.serveRevocations(m.NC, sec, srv); err != nil {
						return err
					}
					for _, t := range tenants {
						if err := a.provisionTenant(cmd.Context(), sec, t.Name); err != nil {
							return err
						}
					}
					own = m.NC
				}
			}
			defer a.followRollouts(cmd.Context(), srv, sec, own, a.errOut)()
			fmt.Fprintf(a.out, "NATS with JetStream listening on %s (data in %s); Ctrl-C stops it\n", srv.URL(), store)
			if sec != nil {
				fmt.Fprintf(a.out, "secure: TLS (CA %s) and credentials required; admin credentials in %s; issue more with: agentmesh creds ROLE [NAME] --store %s\n", sec.TLS.CA, a.creds, store)
			}
			for _, t := range tenants {
				fmt.Fprintf(a.out, "tenant %s: an account of its own, provisioned; credentials: agentmesh creds --tenant %s ROLE [NAME] --store %s\n", t.Name, t.Name, store)
			}
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.StoreDir, "store", ".agentmesh", "JetStream data directory")
	f.StringVar(&opts.Host, "host", "127.0.0.1", "listen address")
	f.IntVar(&opts.Port, "port", 4222, "listen port (0 picks a free one)")
	f.BoolVar(&provision, "provision", false, "create the mesh's streams, buckets and object store (always done with --secure)")
	f.StringVar(&opts.Name, "name", "", "this server's name (default agentmesh); each node of a cluster needs its own")
	f.StringVar(&opts.Cluster.Name, "cluster-name", "", "form a cluster of this name with the servers of --routes")
	f.StringVar(&opts.Cluster.Listen, "cluster-listen", "", "host:port to listen on for the other nodes' routes, e.g. 127.0.0.1:6222")
	f.StringSliceVar(&opts.Cluster.Routes, "routes", nil, "the other nodes' route URLs (nats://host:port of their --cluster-listen), comma-separated")
	natsHTTPPortFlag(f, &opts.HTTPPort)
	mf.register(f)
	sf.register(f)
	tf.register(f)
	return cmd
}
