// Package bustest is the one test helper of agentmesh: a real, in-process
// NATS server with JetStream per test, with connections, a JetStream handle
// and the mesh's streams and buckets, all cleaned up when the test ends.
package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
)

// Server is an embedded NATS server with JetStream owned by one test.
type Server struct {
	emb   *embedded.Server
	names bus.Names
}

// Start starts an embedded JetStream server on a random port with its store
// in t.TempDir(), and shuts it down when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	emb, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("bustest: starting embedded NATS: %v", err)
	}
	t.Cleanup(emb.Shutdown)
	return &Server{emb: emb, names: bus.MustNames(bus.DefaultPrefix)}
}

// URL returns the server's client URL.
func (s *Server) URL() string { return s.emb.URL() }

// Embedded returns the embedded server itself.
func (s *Server) Embedded() *embedded.Server { return s.emb }

// Names returns the names for the default prefix "mesh".
func (s *Server) Names() bus.Names { return s.names }

// Conn returns a new connection, closed when the test ends.
func (s *Server) Conn(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.URL(), nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("bustest: connecting to %s: %v", s.URL(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream returns a JetStream handle on a new connection.
func (s *Server) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(s.Conn(t))
	if err != nil {
		t.Fatalf("bustest: jetstream: %v", err)
	}
	return js
}

// Provision makes the mesh's streams, buckets and object store with default
// options and the "mesh" prefix.
func (s *Server) Provision(t testing.TB) *bus.Resources {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := bus.Provision(ctx, s.JetStream(t), s.names, bus.ProvisionOptions{})
	if err != nil {
		t.Fatalf("bustest: provisioning: %v", err)
	}
	return r
}

// LimitStream bounds stream name to maxMsgs messages with the discard
// policy new, as an operator bounding a stream does: once it holds
// maxMsgs, a publish to it is refused (JetStream error code 10077,
// "maximum messages exceeded").
func (s *Server) LimitStream(t testing.TB, name string, maxMsgs int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js := s.JetStream(t)
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("bustest: stream %s: %v", name, err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = maxMsgs, jetstream.DiscardNew
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("bustest: limiting stream %s to %d messages: %v", name, maxMsgs, err)
	}
}
