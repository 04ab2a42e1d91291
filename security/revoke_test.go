package security_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/security"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// dial connects with the credentials file path the way agentmesh does.
func dial(s *securetest.Server, path string) (*nats.Conn, error) {
	return bus.ConnectOptions{URL: s.URL(), CredsFile: path, TLSCA: s.CA()}.Connect(context.Background())
}

// watch connects with path and returns the connection and a channel that
// receives the asynchronous errors the server sends it.
func watch(t *testing.T, s *securetest.Server, path string) (*nats.Conn, <-chan error) {
	t.Helper()
	nc, err := dial(s, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	errs := make(chan error, 16)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	})
	return nc, errs
}

// serveRevocations answers revocations for s's server, as the secure
// server's process does.
func serveRevocations(t *testing.T, s *securetest.Server) {
	t.Helper()
	r := &security.Revoker{Authority: s.Sec.Authority, Server: s.Emb.NATS()}
	sub, err := r.Serve(s.Admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

// Revoking an identity disconnects its connections at once and refuses
// every credentials file of it issued before, now and after a restart;
// credentials issued after the revocation work; other identities are
// untouched.
func TestRevokeIdentity(t *testing.T) {
	s := securetest.Start(t)
	serveRevocations(t, s)
	x := bus.Identity{Role: bus.RoleClient, Name: "x"}
	old1, old2 := s.Creds(t, x), s.Creds(t, x)
	conn, errs := watch(t, s, old1)
	other, _ := watch(t, s, s.Creds(t, bus.Identity{Role: bus.RoleClient, Name: "y"}))

	reply, err := s.Sec.Authority.Revoke(context.Background(), s.Admin, x.User())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Keys != 2 || reply.User != "client-x" || reply.At == 0 {
		t.Errorf("reply %+v, want the 2 keys of client-x revoked", reply)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrAuthRevoked) {
			t.Fatalf("the revoked connection was told %v, want %v", err, nats.ErrAuthRevoked)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the revoked connection was not disconnected")
	}
	fixture.Eventually(t, "the revoked connection to drop", func() bool { return !conn.IsConnected() })
	if err := other.Flush(); err != nil {
		t.Errorf("client-y lost its connection: %v", err)
	}
	for _, path := range []string{old1, old2} {
		if nc, err := dial(s, path); !errors.Is(err, bus.ErrAuth) {
			if nc != nil {
				nc.Close()
			}
			t.Fatalf("a revoked credentials file connects (err %v)", err)
		}
	}
	fresh := s.Creds(t, x)
	nc, err := dial(s, fresh)
	if err != nil {
		t.Fatalf("credentials issued after the revocation: %v", err)
	}
	nc.Close()

	s.Restart(t)
	if nc, err := dial(s, old1); !errors.Is(err, bus.ErrAuth) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("after a restart a revoked credentials file connects (err %v)", err)
	}
	if nc, err = dial(s, fresh); err != nil {
		t.Fatalf("after a restart, credentials issued after the revocation: %v", err)
	}
	nc.Close()
}

// A connected identity whose credentials the ledger does not hold (issued
// elsewhere, or before the ledger was kept) is revoked by its connection.
func TestRevokeConnectedNotInLedger(t *testing.T) {
	s := securetest.Start(t)
	serveRevocations(t, s)
	z := bus.Identity{Role: bus.RoleAgent, Name: "Z"}
	_, errs := watch(t, s, s.Creds(t, z))
	if err := os.Remove(filepath.Join(s.Dir, security.Dir, "issued")); err != nil {
		t.Fatal(err)
	}
	reply, err := s.Sec.Authority.Revoke(context.Background(), s.Admin, z.User())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Keys != 1 {
		t.Errorf("revoked %d keys, want the connected one", reply.Keys)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrAuthRevoked) {
			t.Fatalf("told %v, want %v", err, nats.ErrAuthRevoked)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the connection was not disconnected")
	}
}

// What cannot be revoked is refused with a code and a reason, and the
// account is not revised.
func TestRevokeRefusals(t *testing.T) {
	s := securetest.Start(t)
	serveRevocations(t, s)
	s.Creds(t, bus.Identity{Role: bus.RoleAdmin})
	for user, code := range map[string]string{
		"admin":         schemas.CodeForbidden,
		"client-nobody": schemas.CodeNotFound,
		"boss-x":        schemas.CodeInvalidRequest,
	} {
		_, err := s.Sec.Authority.Revoke(context.Background(), s.Admin, user)
		var re *schemas.ResultError
		if !errors.As(err, &re) || re.Code != code {
			t.Errorf("revoking %s: %v, want code %s", user, err, code)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, security.Dir, "account.jwt")); err == nil {
		t.Error("a refused revocation revised the account")
	}
	// Only admin may ask: a client's request is refused by the server.
	nc := s.Connect(t, bus.Identity{Role: bus.RoleClient, Name: "c"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := s.Sec.Authority.Revoke(ctx, nc, "client-c"); err == nil {
		t.Error("a client revoked an identity")
	}
	if _, err := os.Stat(filepath.Join(s.Dir, security.Dir, "account.jwt")); err == nil {
		t.Error("a client's request revised the account")
	}
}

// Credentials issued with an expiry stop working once it has passed.
func TestCredsExpire(t *testing.T) {
	s := securetest.Start(t)
	data, err := s.Sec.Authority.Creds(bus.Identity{Role: bus.RoleClient, Name: "brief"}, s.Names, security.WithExpiry(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "brief.creds")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if nc, err := dial(s, path); !errors.Is(err, bus.ErrAuth) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("expired credentials connect (err %v)", err)
	}
}

// A revocation request from the bus decodes to an identity and user keys,
// or is refused; it never panics.
func FuzzRevokeRequest(f *testing.F) {
	f.Add([]byte(`{"user":"client-alice","keys":["UAYV3VCAOB2GKXA7PBGG2OFIGMSFSV3SP4DRWRPHPAKOHRW3VDSZJHFX"]}`))
	f.Add([]byte(`{"user":"admin"}`))
	f.Add([]byte(`{"user":"client-","keys":["SU..."]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := security.DecodeRevokeRequest(data)
		if err != nil {
			return
		}
		if _, err := bus.ParseUser(req.User); err != nil {
			t.Fatalf("accepted user %q: %v", req.User, err)
		}
		for _, k := range req.Keys {
			if len(k) != 56 || k[0] != 'U' {
				t.Fatalf("accepted key %q", k)
			}
		}
	})
}
