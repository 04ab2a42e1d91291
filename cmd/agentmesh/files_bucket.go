package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/security"
)

// files returns the file store this identity works with
// (docs/security.md, "Files"): a client of a secure mesh its own bucket;
// an agent or the orchestrator the shared bucket, following each task's
// owner into that client's bucket; admin and a plain mesh the shared one.
func (m *mesh) files(ctx context.Context) (*resolvers.ObjectStore, error) {
	switch m.ID.Role {
	case bus.RoleClient:
		bucket := m.Names.ClientFilesStore(m.ID.Name)
		obs, err := m.JS.ObjectStore(ctx, bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("client %s has no files bucket %s: admin makes it when issuing the client's credentials: run `agentmesh creds client %s --nats URL` on the running mesh (or restart the secure server, which makes the buckets of the clients it issued)", m.ID.Name, bucket, m.ID.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("files bucket %s: %w", bucket, err)
		}
		return resolvers.NewObjectStore(obs, resolvers.WithStoreName(bucket)), nil
	case bus.RoleAgent, bus.RoleOrchestrator:
		return m.agentFiles(), nil
	}
	return resolvers.NewObjectStore(m.Res.Files), nil
}

// agentFiles is the store of a built-in agent: the shared bucket,
// following each task's owner into that client's bucket.
func (m *mesh) agentFiles() *resolvers.ObjectStore {
	return resolvers.NewObjectStore(m.Res.Files, resolvers.WithOwnerBuckets(m.JS, m.Names.ClientFilesStore))
}

// provisionIssuedClientFiles makes, as admin at a secure server's start,
// the files bucket of every client the store's ledger holds credentials
// for: those issued before the server ran, or before buckets had owners.
func provisionIssuedClientFiles(ctx context.Context, m *mesh, sec *security.Server) error {
	clients, err := sec.Authority.IssuedClients()
	if err != nil {
		return err
	}
	return provisionClientFiles(ctx, m, clients)
}

// provisionClientFiles makes the files bucket of each client on m, an
// admin's connection.
func provisionClientFiles(ctx context.Context, m *mesh, clients []string) error {
	for _, c := range clients {
		if _, err := bus.ProvisionClientFiles(ctx, m.JS, m.Names, c); err != nil {
			return err
		}
	}
	return nil
}

// makeClientFiles makes client c's files bucket as admin on the running
// mesh (as tenant's admin in its account, with a tenant), for `agentmesh
// creds client`; when no mesh answers, it says so and
// that the server makes it at its next start (provisionIssuedClientFiles).
func (a *app) makeClientFiles(ctx context.Context, auth *security.Authority, dir string, names bus.Names, tenant, c string) {
	bucket := names.ClientFilesStore(c)
	var nc *nats.Conn
	var err error
	if tenant == "" {
		nc, err = a.adminConn(ctx, auth, dir)
	} else {
		nc, err = a.tenantAdminConn(ctx, auth, dir, names, tenant)
	}
	if err == nil {
		defer nc.Close()
		var js jetstream.JetStream
		if js, err = jetstream.New(nc); err == nil {
			_, err = bus.ProvisionClientFiles(ctx, js, names, c)
		}
	}
	if err != nil {
		fmt.Fprintf(a.errOut, "agentmesh: client %s's files bucket %s is not made yet (%v): the secure server makes it at its next start, or run this again with --nats set to the running mesh\n", c, bucket, err)
	}
}

// tenantAdminConn connects as tenant's admin with a credential it signs
// for a minute, trusting the CA under dir unless --tls-ca names one.
func (a *app) tenantAdminConn(ctx context.Context, auth *security.Authority, dir string, names bus.Names, tenant string) (*nats.Conn, error) {
	creds, err := auth.TenantCreds(tenant, bus.Identity{Role: bus.RoleAdmin}, names, security.WithExpiry(time.Minute))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "agentmesh-admin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	opts := bus.ConnectOptions{URL: a.natsURL, CredsFile: filepath.Join(tmp, "admin.creds"), TLSCA: a.tlsCA, Name: "agentmesh creds (tenant " + tenant + ")", RetryFor: a.connectWait.v}
	if opts.TLSCA == "" {
		opts.TLSCA = filepath.Join(dir, "ca.pem")
	}
	if err := os.WriteFile(opts.CredsFile, creds, 0o600); err != nil {
		return nil, err
	}
	return opts.Connect(ctx)
}
