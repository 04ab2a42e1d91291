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
)

// app holds the global flags and the output streams shared by every command.
type app struct {
	natsURL string
	creds   string
	prefix  string
	jsonOut bool
	owner   bool // this process sets the mesh's retention (up, server --provision)
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
	res, err := bus.Provision(ctx, js, names, a.provisionOptions())
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &mesh{NC: nc, JS: js, Names: names, Res: res}, nil
}

// printJSON writes v as indented JSON to the command's output.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
