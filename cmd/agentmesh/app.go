package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/stateview"
)

// app holds the global flags and the output streams shared by every command.
type app struct {
	natsURL  string
	creds    string
	tlsCA    string
	credsDir string // a secure server's credentials directory (server, up)
	prefix   string
	jsonOut  bool
	owner    bool // this process sets the mesh's retention (up, server --provision)
	settings
	obs observability // log flags and trace export (observe.go)

	out    io.Writer
	errOut io.Writer
}

// mesh is a connection to a provisioned mesh.
type mesh struct {
	NC    *nats.Conn
	JS    jetstream.JetStream
	Names bus.Names
	Res   *bus.Resources
	ID    bus.Identity // the agentmesh identity of --creds; zero without one
}

// store returns the conversation and run state, or nil when this identity
// may not read it (a client of a secure mesh).
func (m *mesh) store() *stateview.View {
	if m.ID.Role == bus.RoleClient || m.ID.Role == bus.RoleAgent {
		return nil
	}
	return stateview.New(m.Res.Conversations, m.Res.Runs)
}

// needStore is store for commands that show nothing without state.
func (m *mesh) needStore() (*stateview.View, error) {
	if s := m.store(); s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("the credentials of %s may not read conversation and run state on a secure mesh: use admin or orchestrator credentials (agentmesh creds admin)", m.ID.User())
}

// Close drains the connection.
func (m *mesh) Close() {
	if m != nil && m.NC != nil {
		_ = m.NC.Drain()
	}
}

// connect dials NATS with the global flags (and the standard NATS_*
// variables), then provisions the mesh's streams, buckets and object store.
func (a *app) connect(ctx context.Context, name string) (*mesh, error) {
	opts := bus.OptionsFromEnv()
	if a.natsURL != "" {
		opts.URL = a.natsURL
	}
	if a.creds != "" {
		opts.CredsFile = a.creds
	}
	if a.tlsCA != "" {
		opts.TLSCA = a.tlsCA
	}
	var id bus.Identity
	if opts.CredsFile != "" {
		id, _ = bus.CredsIdentity(opts.CredsFile) // other credentials: no agentmesh identity
	}
	opts.Name = name
	opts.RetryFor = a.connectWait.v
	opts.OnRetry = func(attempt int, wait time.Duration, err error) {
		fmt.Fprintf(a.errOut, "agentmesh: %v; attempt %d, retrying in %s (waiting up to %s in all, --connect-wait)\n", err, attempt, wait, opts.RetryFor)
	}
	nc, err := opts.Connect(ctx)
	if err != nil {
		return nil, err
	}
	names, err := bus.NewNames(a.prefix)
	if err != nil {
		nc.Close()
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	popts := a.provisionOptions()
	// On a secure mesh only admin may change streams; the server made them.
	popts.BindOnly = id.Role != "" && id.Role != bus.RoleAdmin
	res, err := bus.Provision(ctx, js, names, popts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if id.Role == bus.RoleClient {
		names = names.ForClient(id.Name) // a client's requests go on its own subjects
	}
	return &mesh{NC: nc, JS: js, Names: names, Res: res, ID: id}, nil
}

// printJSON writes v as indented JSON to the command's output.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
