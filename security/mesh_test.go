package security_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// secureMesh is an embedded server started the way `agentmesh server
// --secure` starts it, with connections that record permission errors.
type secureMesh struct {
	*securetest.Server
	names bus.Names
	res   *bus.Resources
}

func startSecure(t *testing.T) *secureMesh {
	t.Helper()
	s := securetest.Start(t)
	return &secureMesh{Server: s, names: s.Names, res: s.Res}
}

// conn is a connection of one identity that records the server's
// permission errors.
type conn struct {
	*nats.Conn
	js   jetstream.JetStream
	errs chan error
}

// connect connects as id and records its permission errors.
func (m *secureMesh) connect(t testing.TB, id bus.Identity) *conn {
	t.Helper()
	c := &conn{errs: make(chan error, 64), Conn: m.Connect(t, id)}
	c.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case c.errs <- err:
		default:
		}
	})
	var err error
	if c.js, err = jetstream.New(c.Conn); err != nil {
		t.Fatal(err)
	}
	return c
}

// denied waits for the server's permissions violation naming subject.
func (c *conn) denied(t testing.TB, op, subject string) {
	t.Helper()
	want := op + ` to "` + subject + `"`
	timeout := time.After(5 * time.Second)
	for {
		select {
		case err := <-c.errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
				return
			}
		case <-timeout:
			t.Fatalf("no permissions violation for %s %q", op, subject)
		}
	}
}

// publishDenied publishes msg with JetStream as c and asserts that the
// server refused it: no ack, a permissions violation naming the subject.
func (c *conn) publishDenied(t testing.TB, msg *nats.Msg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := c.js.PublishMsg(ctx, msg); err == nil {
		t.Fatalf("publish to %s was acknowledged", msg.Subject)
	}
	c.denied(t, "Publish", msg.Subject)
}

// serve runs agent a as identity agent-<its name> until the test ends.
func (m *secureMesh) serve(t *testing.T, a agents.Agent, opts ...agents.Option) {
	t.Helper()
	c := m.connect(t, bus.Identity{Role: bus.RoleAgent, Name: a.Contract().Name})
	meshtest.Serve(t, c.Conn, a, append([]agents.Option{agents.WithHeartbeat(time.Second)}, opts...)...)
}

// orchestrator runs a replica as the orchestrator identity.
func (m *secureMesh) orchestrator(t *testing.T, wait ...string) *orchestrator.Orchestrator {
	t.Helper()
	c := m.connect(t, bus.Identity{Role: bus.RoleOrchestrator})
	o, err := orchestrator.New(c.Conn)
	if err != nil {
		t.Fatal(err)
	}
	meshtest.RunOrchestrator(t, o)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	for _, a := range wait {
		if err := o.Registry().Wait(wctx, a, 1); err != nil {
			t.Fatal(err)
		}
	}
	return o
}
