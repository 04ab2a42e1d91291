package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
)

// followRollouts makes srv, the embedded server of this process, apply the
// mesh's agent rollouts (embedded.Server.FollowRollouts) over a connection
// of its own, as admin on a secure mesh. It returns what stops it. A
// server that cannot follow still serves: it says so on log, and
// 'agentmesh rollout' reports that no server applied a rollout.
func (a *app) followRollouts(ctx context.Context, srv *embedded.Server, log io.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	opts := bus.OptionsFromEnv()
	opts.URL = dialURL(srv.URL())
	opts.CredsFile, opts.TLSCA = a.creds, a.tlsCA
	opts.Name = "agentmesh server (rollouts)"
	names, err := bus.NewNames(a.prefix)
	if err != nil {
		cancel()
		fmt.Fprintf(log, "agentmesh: rollouts are not applied by this server: %v\n", err)
		return func() {}
	}
	nc, err := opts.Connect(ctx)
	if err == nil {
		if err = srv.FollowRollouts(ctx, nc, names, a.logger(false), nil); err != nil {
			nc.Close()
		}
	}
	if err != nil {
		cancel()
		fmt.Fprintf(log, "agentmesh: rollouts are not applied by this server: %v\n", err)
		return func() {}
	}
	return func() {
		cancel()
		nc.Close()
	}
}
