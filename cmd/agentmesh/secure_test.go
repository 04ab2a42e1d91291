package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/proctest"
)

// startSecureServer runs `agentmesh server --secure` as its own process
// and returns its URL and store directory.
func startSecureServer(t *testing.T, extra ...string) (url, store string) {
	t.Helper()
	store = t.TempDir()
	_, url = startSecureServerIn(t, store, extra...)
	return url, store
}

// startSecureServerIn runs `agentmesh server --secure` on store (a new
// one, or one a server ran on before) and returns the process and its URL.
func startSecureServerIn(t *testing.T, store string, extra ...string) (*proctest.Proc, string) {
	t.Helper()
	cmd := exec.Command(agentBinary(t), append([]string{"server", "--secure", "--store", store, "--port", "0"}, extra...)...)
	p := proctest.Start(t, cmd, regexp.MustCompile(`listening on (tls://\S+)`))
	p.StopWith(os.Interrupt, 10*time.Second)
	return p, p.WaitReady(t)[1]
}

// creds runs `agentmesh creds ARGS --store store -o FILE` and returns FILE.
func issueCreds(t *testing.T, store string, args ...string) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", ":", "_").Replace(strings.Join(args, "-")) // a --nats URL among them
	out := filepath.Join(t.TempDir(), name+".creds")
	cmdArgs := append(append([]string{"creds"}, args...), "--store", store, "-o", out)
	if _, stderr, code := runBinary(t, exec.Command(agentBinary(t), cmdArgs...)); code != 0 {
		t.Fatalf("agentmesh %s: exit %d: %s", strings.Join(cmdArgs, " "), code, stderr)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file %s: %v %v, want mode 0600", out, fi, err)
	}
	return out
}

// The shipped binary, run the secure way: an agent and a client with
// credentials from `agentmesh creds` work; a client cannot write the
// registry nor read state; generated keys and certificates are reused.
func TestBinarySecureServer(t *testing.T) {
	credsDir := t.TempDir()
	url, store := startSecureServer(t, "--creds-dir", credsDir, "--issue", "agent-TextAgent")
	ca := filepath.Join(credsDir, "ca.pem") // the copy beside the issued credentials
	for _, f := range []string{"operator.nk", "account.nk", "account-signing.nk", "ca-key.pem", "server-key.pem"} {
		if fi, err := os.Stat(filepath.Join(store, "secure", f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want a 0600 file", f, err)
		}
	}
	startAgentProc(t, url, "--creds", filepath.Join(credsDir, "agent-TextAgent.creds"), "--tls-ca", ca)
	alice := issueCreds(t, store, "client", "alice")

	// The legitimate path: a direct call with the client's credentials.
	stdout, stderr, code := runBinary(t, exec.Command(agentBinary(t), "task", "TextAgent", "--text", "text=hello", "--param", "op=upper",
		"--nats", url, "--creds", alice, "--tls-ca", ca, "--json"))
	if code != 0 || !strings.Contains(stdout, "HELLO") {
		t.Fatalf("agentmesh task as alice: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// State is not a client's to read.
	_, stderr, code = runBinary(t, exec.Command(agentBinary(t), "runs", "--nats", url, "--creds", alice, "--tls-ca", ca))
	if code == 0 || !strings.Contains(stderr, "client-alice may not read conversation and run state") {
		t.Fatalf("agentmesh runs as alice: exit %d: %s", code, stderr)
	}
	// Nor the registry a client's to write.
	errs := make(chan error, 8)
	opts := bus.ConnectOptions{URL: url, CredsFile: issueCreds(t, store, "client", "mallory"), TLSCA: ca}
	nc, err := opts.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err })
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := js.Publish(ctx, "$KV.mesh_agents.TextAgent.evil", []byte(`{}`)); err == nil {
		t.Fatal("mallory wrote TextAgent's registry key")
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "$KV.mesh_agents.TextAgent.evil") {
			t.Fatalf("error %v, want a permissions violation", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no permissions violation")
	}
	// Without credentials the server refuses the connection.
	_, stderr, code = runBinary(t, exec.Command(agentBinary(t), "agents", "--nats", url, "--tls-ca", ca, "--creds", ""))
	if code == 0 || !strings.Contains(stderr, "refused the credentials") {
		t.Fatalf("agentmesh agents without credentials: exit %d: %s", code, stderr)
	}
}
