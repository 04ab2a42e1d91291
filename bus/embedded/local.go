package embedded

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
)

// Local is a whole mesh in one process: an embedded NATS server with
// JetStream, a connection to it, and the streams, buckets and object store
// of the wire contract, provisioned. It is what examples, demos and tests
// of a single process start from.
type Local struct {
	Server    *Server
	Conn      *nats.Conn
	JS        jetstream.JetStream
	Names     bus.Names
	Resources *bus.Resources
}

// StartLocal starts an embedded server with opts, connects to it and
// provisions the mesh under the default prefix. Close stops it all.
func StartLocal(ctx context.Context, opts Options) (*Local, error) {
	srv, err := Start(opts)
	if err != nil {
		return nil, err
	}
	l := &Local{Server: srv, Names: bus.MustNames(bus.DefaultPrefix)}
	if l.Conn, err = nats.Connect(srv.URL()); err != nil {
		srv.Shutdown()
		return nil, fmt.Errorf("connecting to the embedded server: %w", err)
	}
	if l.JS, err = jetstream.New(l.Conn); err == nil {
		l.Resources, err = bus.Provision(ctx, l.JS, l.Names, bus.ProvisionOptions{})
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Close closes the connection and shuts the server down, removing a
// temporary store.
func (l *Local) Close() {
	l.Conn.Close()
	l.Server.Shutdown()
}
