// Package securetest starts an embedded NATS server the way `agentmesh
// server --secure` does (JWT authentication, TLS, provisioned as admin) for
// tests, and issues credentials files for identities.
package securetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/security"
)

// Server is a running secure server with the mesh provisioned.
type Server struct {
	Sec   *security.Server
	Emb   *embedded.Server
	Names bus.Names
	Res   *bus.Resources // bound as admin
	Admin *nats.Conn
	Dir   string // the store directory; the keys are under Dir/secure

	tenants []security.Tenant // StartTenants'
	share   []string
}

// Start starts a secure server under a temporary store until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{Names: bus.MustNames(""), Dir: t.TempDir()}
	s.start(t)
	return s
}

// StartTenants starts a secure server as Start does, with tenants as
// accounts of their own and the agents of share shared with them
// (security.SetTenants). Each tenant's mesh is not provisioned: see
// ProvisionTenant.
func StartTenants(t testing.TB, share []string, tenants ...security.Tenant) *Server {
	t.Helper()
	s := &Server{Names: bus.MustNames(""), Dir: t.TempDir(), tenants: tenants, share: share}
	s.start(t)
	return s
}

// start starts the server from the store (keys, account and streams made
// before are reused), connects as admin and provisions the mesh.
func (s *Server) start(t testing.TB) {
	t.Helper()
	sec, err := security.Setup(s.Dir, security.TLSFiles{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.tenants) > 0 {
		if err := sec.Authority.SetTenants(s.Names, s.share, s.tenants...); err != nil {
			t.Fatal(err)
		}
	}
	emb, err := embedded.Start(embedded.Options{StoreDir: s.Dir, Configure: sec.Configure})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	s.Sec, s.Emb = sec, emb
	s.Admin = s.Connect(t, bus.Identity{Role: bus.RoleAdmin})
	js, err := jetstream.New(s.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if s.Res, err = bus.Provision(ctx, js, s.Names, bus.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Restart shuts the server down and starts it again from the same store,
// as a new process would: the keys and the account (with its revisions)
// are read from the store. Connections made before are closed; Admin and
// Res are new ones, and the server listens on a new port.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Admin.Close()
	s.Emb.Shutdown()
	s.start(t)
}

// URL returns the server's client URL.
func (s *Server) URL() string { return s.Emb.URL() }

// CA returns the CA certificate file clients trust.
func (s *Server) CA() string { return s.Sec.TLS.CA }

// Creds writes a credentials file for id and returns its path.
func (s *Server) Creds(t testing.TB, id bus.Identity) string {
	t.Helper()
	data, err := s.Sec.Authority.Creds(id, s.Names)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), id.User()+".creds")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Connect connects as id the way every agentmesh process does
// (bus.ConnectOptions: credentials file, CA, the identity's inbox prefix);
// the connection closes when the test ends.
func (s *Server) Connect(t testing.TB, id bus.Identity) *nats.Conn {
	t.Helper()
	opts := bus.ConnectOptions{URL: s.URL(), CredsFile: s.Creds(t, id), TLSCA: s.CA(), Name: id.User()}
	nc, err := opts.Connect(context.Background())
	if err != nil {
		t.Fatalf("connecting as %s: %v", id.User(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TenantCreds writes a credentials file for id of tenant and returns its
// path.
func (s *Server) TenantCreds(t testing.TB, tenant string, id bus.Identity) string {
	t.Helper()
	data, err := s.Sec.Authority.TenantCreds(tenant, id, s.Names)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), tenant+"-"+id.User()+".creds")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ConnectTenant connects as id of tenant, as Connect does.
func (s *Server) ConnectTenant(t testing.TB, tenant string, id bus.Identity) *nats.Conn {
	t.Helper()
	opts := bus.ConnectOptions{URL: s.URL(), CredsFile: s.TenantCreds(t, tenant, id), TLSCA: s.CA(), Name: tenant + "/" + id.User()}
	nc, err := opts.Connect(context.Background())
	if err != nil {
		t.Fatalf("connecting as %s of tenant %s: %v", id.User(), tenant, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// ProvisionTenant provisions tenant's mesh in its account as its admin,
// as `agentmesh server --secure --tenant` does, and returns the admin's
// connection and the resources.
func (s *Server) ProvisionTenant(t testing.TB, tenant string, opts bus.ProvisionOptions) (*nats.Conn, *bus.Resources) {
	t.Helper()
	nc := s.ConnectTenant(t, tenant, bus.Identity{Role: bus.RoleAdmin})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := bus.Provision(ctx, js, s.Names, opts)
	if err != nil {
		t.Fatalf("provisioning tenant %s: %v", tenant, err)
	}
	return nc, res
}

// ClientFiles makes client c's files bucket as admin does when issuing
// its credentials (bus.ProvisionClientFiles) and returns admin's handle.
func (s *Server) ClientFiles(t testing.TB, c string) jetstream.ObjectStore {
	t.Helper()
	js, err := jetstream.New(s.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	obs, err := bus.ProvisionClientFiles(ctx, js, s.Names, c)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}
