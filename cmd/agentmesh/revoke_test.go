package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/security"
)

// connectCreds connects to url with a credentials file, trusting ca.
func connectCreds(url, creds, ca string) (*nats.Conn, error) {
	return bus.ConnectOptions{URL: url, CredsFile: creds, TLSCA: ca}.Connect(context.Background())
}

// refused fails the test unless the server at url refuses creds.
func refused(t *testing.T, url, creds, ca, when string) {
	t.Helper()
	nc, err := connectCreds(url, creds, ca)
	if nc != nil {
		nc.Close()
	}
	if !errors.Is(err, bus.ErrAuth) {
		t.Fatalf("%s: revoked credentials connect (err %v)", when, err)
	}
}

// The shipped binaries: `agentmesh creds revoke client-x` against a running
// `agentmesh server --secure` disconnects client-x at once and refuses its
// credentials from then on, across a restart of the server; credentials
// issued after the revocation connect.
func TestBinaryCredsRevoke(t *testing.T) {
	store := t.TempDir()
	p, url := startSecureServerIn(t, store, "--issue", "client-x")
	ca := filepath.Join(store, "secure", "ca.pem")
	issued := filepath.Join(store, "secure", "creds", "client-x.creds") // --issue's
	old := issueCreds(t, store, "client", "x")
	nc, err := connectCreds(url, old, ca)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	errs := make(chan error, 16)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	})
	other := issueCreds(t, store, "client", "y")

	// Only admin may revoke.
	_, stderr, code := runBinary(t, exec.Command(agentBinary(t), "creds", "revoke", "client-x", "--store", store, "--nats", url, "--creds", other))
	if code == 0 || !strings.Contains(stderr, "only admin may revoke") {
		t.Fatalf("revoke as client-y: exit %d: %s", code, stderr)
	}

	stdout, stderr, code := runBinary(t, exec.Command(agentBinary(t), "creds", "revoke", "client-x", "--store", store, "--nats", url))
	if code != 0 || !strings.Contains(stdout, "revoked client-x: 2 credentials") {
		t.Fatalf("agentmesh creds revoke client-x: exit %d\n%s\n%s", code, stdout, stderr)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrAuthRevoked) {
			t.Fatalf("the connection of client-x was told %v, want %v", err, nats.ErrAuthRevoked)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the connection of client-x was not closed")
	}
	fixture.Eventually(t, "client-x to be disconnected", func() bool { return !nc.IsConnected() })
	refused(t, url, old, ca, "after revoke")
	if _, err := os.Stat(issued); err == nil {
		t.Errorf("the revoked --issue file %s is kept", issued)
	}
	fresh := issueCreds(t, store, "client", "x")
	nc2, err := connectCreds(url, fresh, ca)
	if err != nil {
		t.Fatalf("credentials issued after the revocation: %v", err)
	}
	nc2.Close()
	ny, err := connectCreds(url, other, ca)
	if err != nil {
		t.Fatalf("client-y was revoked too: %v", err)
	}
	ny.Close()

	// A server restarted from the store still refuses the revoked ones.
	if err := p.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	_, url = startSecureServerIn(t, store)
	refused(t, url, old, ca, "after a restart")
	nc3, err := connectCreds(url, fresh, ca)
	if err != nil {
		t.Fatalf("after a restart, credentials issued after the revocation: %v", err)
	}
	nc3.Close()

	// --json prints the server's answer.
	stdout, stderr, code = runBinary(t, exec.Command(agentBinary(t), "creds", "revoke", "client", "y", "--store", store, "--nats", url, "--json"))
	var reply security.RevokeReply
	if code != 0 || json.Unmarshal([]byte(stdout), &reply) != nil || reply.User != "client-y" || reply.Keys != 1 {
		t.Fatalf("creds revoke client y --json: exit %d\n%s\n%s", code, stdout, stderr)
	}
	refused(t, url, other, ca, "client-y after its revocation")
}

// `creds --expires` issues credentials that expire; a bad duration is a
// usage error naming it.
func TestBinaryCredsExpires(t *testing.T) {
	_, store := startSecureServer(t)
	path := issueCreds(t, store, "client", "brief", "--expires", "24h")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.ParseDecoratedJWT(raw)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(time.Unix(uc.Expires, 0)); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("the credentials expire in %s, want 24h", d)
	}
	_, stderr, code := runBinary(t, exec.Command(agentBinary(t), "creds", "client", "x", "--store", store, "--expires", "-1h"))
	if code == 0 || !strings.Contains(stderr, "--expires -1h0m0s") {
		t.Fatalf("--expires -1h: exit %d: %s", code, stderr)
	}
}

// `agentmesh up --secure` answers revocations as the server does.
func TestBinaryUpSecureRevokes(t *testing.T) {
	up := startUp(t, agentBinary(t), "--secure", "--http", "")
	store := flagValue(up.cmd.Args, "store")
	ca := filepath.Join(store, "secure", "ca.pem")
	creds := issueCreds(t, store, "client", "x")
	nc, err := connectCreds(up.url, creds, ca)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	stdout, stderr, code := runBinary(t, exec.Command(agentBinary(t), "creds", "revoke", "client-x", "--store", store, "--nats", up.url))
	if code != 0 || !strings.Contains(stdout, "revoked client-x: 1 credentials") {
		t.Fatalf("agentmesh creds revoke client-x: exit %d\n%s\n%s", code, stdout, stderr)
	}
	fixture.Eventually(t, "client-x to be disconnected", func() bool { return !nc.IsConnected() })
	refused(t, up.url, creds, ca, "after revoke")
}

// `agentmesh server --secure --max-connections N`: a connection past the
// account's quota is refused, and the CLI says which limit it met.
func TestBinaryQuotaConnections(t *testing.T) {
	store := t.TempDir()
	_, url := startSecureServerIn(t, store, "--max-connections", "2") // the server's own and one more
	ca := filepath.Join(store, "secure", "ca.pem")
	nc, err := connectCreds(url, issueCreds(t, store, "client", "a"), ca)
	if err != nil {
		t.Fatalf("the one connection the quota leaves: %v", err)
	}
	defer nc.Close()
	_, stderr, code := runBinary(t, exec.Command(agentBinary(t), "agents", "--nats", url, "--creds", issueCreds(t, store, "client", "cli"), "--tls-ca", ca))
	if code == 0 || !strings.Contains(stderr, "maximum account active connections exceeded") || !strings.Contains(stderr, "--max-connections") {
		t.Fatalf("agentmesh agents past the quota: exit %d: %s", code, stderr)
	}
	// Quotas are the secure account's: without --secure they are refused.
	_, stderr, code = runBinary(t, exec.Command(agentBinary(t), "server", "--store", t.TempDir(), "--port", "0", "--max-store", "1GiB"))
	if code != exitUsage || !strings.Contains(stderr, "--max-store") || !strings.Contains(stderr, "need --secure") {
		t.Fatalf("server --max-store without --secure: exit %d: %s", code, stderr)
	}
}
