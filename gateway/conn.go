package gateway

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/resolvers"
)

// conn is one identity the gateway acts as on the mesh: the connection
// given to New, or the one a bearer token maps to. Everything a request
// does goes through its conn, so the server enforces that identity's
// permissions.
type conn struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	names bus.Names
	res   *bus.Resources
	id    bus.Identity
	reg   *client.Registry
	store *stateview.View // nil: this identity may not read state (a client or an agent)
	files *resolvers.ObjectStore
	disp  *client.Dispatcher
}

// newConn binds nc to the mesh's streams and buckets and starts its
// registry view.
func newConn(ctx context.Context, nc *nats.Conn, names bus.Names, id bus.Identity, popts bus.ProvisionOptions, source string) (*conn, error) {
	if nc == nil {
		return nil, ErrNoConnection
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("gateway: jetstream: %w", err)
	}
	popts.BindOnly = popts.BindOnly || (id.Role != "" && id.Role != bus.RoleAdmin)
	res, err := bus.Provision(ctx, js, names, popts)
	if err != nil {
		return nil, fmt.Errorf("gateway: binding to the mesh as %s: %w", orAnonymous(id), err)
	}
	reg, err := client.NewRegistry(ctx, res.Agents)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	files := resolvers.NewObjectStore(res.Files)
	if id.Role == bus.RoleClient {
		names = names.ForClient(id.Name) // a client's requests go on its own subjects
		// and its files in its own bucket (docs/security.md, "Files").
		bucket := names.ClientFilesStore(id.Name)
		obs, err := js.ObjectStore(ctx, bucket)
		if err != nil {
			return nil, fmt.Errorf("gateway: the files bucket %s of %s: %w: admin makes it when issuing the client's credentials (agentmesh creds client %s, or a restart of the secure server)", bucket, id.User(), err, id.Name)
		}
		files = resolvers.NewObjectStore(obs, resolvers.WithStoreName(bucket))
	}
	c := &conn{nc: nc, js: js, names: names, res: res, id: id, reg: reg,
		files: files, disp: client.NewDispatcher(js, names, source)}
	if id.Role != bus.RoleClient && id.Role != bus.RoleAgent {
		c.store = stateview.New(res.Conversations, res.Runs)
	}
	return c, nil
}

// needStore returns the state store, or a 403 naming the identity that
// may not read it.
func (c *conn) needStore() (*stateview.View, error) {
	if c.store == nil {
		return nil, fail(CodeForbidden, "the credentials of %s may not read conversation and run state on a secure mesh; use a token mapped to admin or orchestrator credentials", c.id.User())
	}
	return c.store, nil
}

func (c *conn) stop() { c.reg.Stop() }

func orAnonymous(id bus.Identity) string {
	if id.Role == "" {
		return "the connection's user"
	}
	return id.User()
}
