package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The shipped binary on a secure mesh: `creds client` makes the client's
// files bucket on the running mesh; the client puts and gets its files
// there with `agentmesh files`; another client does not find them; the
// server makes the buckets of the clients it issues at start; a tenant's
// client has its bucket in the tenant's account; a client is told
// knowledge bases are admin's.
func TestBinarySecureClientFiles(t *testing.T) {
	url, store := startSecureServer(t, "--issue", "client-bob", "--tenant", "acme")
	ca := filepath.Join(store, "secure", "ca.pem")
	dir := t.TempDir()
	creds := func(name string) string {
		t.Helper()
		out := filepath.Join(dir, name+".creds")
		_, stderr, code := runBinary(t, exec.Command(agentBinary(t), "creds", "client", name, "--store", store, "--nats", url, "-o", out))
		if code != 0 || strings.Contains(stderr, "not made") {
			t.Fatalf("agentmesh creds client %s: exit %d: %s", name, code, stderr)
		}
		return out
	}
	alice, mallory := creds("alice"), creds("mallory")
	doc := filepath.Join(dir, "doc.txt")
	if err := os.WriteFile(doc, []byte("alice's document"), 0o600); err != nil {
		t.Fatal(err)
	}
	as := func(creds string, args ...string) (string, string, int) {
		return runBinary(t, exec.Command(agentBinary(t), append(args, "--nats", url, "--creds", creds, "--tls-ca", ca)...))
	}
	stdout, stderr, code := as(alice, "files", "put", doc)
	id, _, _ := strings.Cut(stdout, "\t")
	if code != 0 || !strings.HasPrefix(id, "f-") {
		t.Fatalf("agentmesh files put as alice: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stdout, stderr, code = as(alice, "files", "get", id); code != 0 || stdout != "alice's document" {
		t.Fatalf("agentmesh files get %s as alice: exit %d\n%q\n%s", id, code, stdout, stderr)
	}
	if stdout, _, code = as(alice, "files", "ls"); code != 0 || !strings.Contains(stdout, id) {
		t.Fatalf("agentmesh files ls as alice: exit %d, %q does not list %s", code, stdout, id)
	}
	if stdout, stderr, code = as(mallory, "files", "get", id); code == 0 || !strings.Contains(stderr, "not found") {
		t.Fatalf("agentmesh files get %s as mallory: exit %d\n%q\n%s", id, code, stdout, stderr)
	}
	if stdout, _, code = as(mallory, "files", "ls"); code != 0 || strings.Contains(stdout, id) {
		t.Fatalf("agentmesh files ls as mallory: exit %d, lists alice's %s: %q", code, id, stdout)
	}
	// The server made the bucket of the client it issued at start.
	bob := filepath.Join(store, "secure", "creds", "client-bob.creds")
	if stdout, stderr, code = as(bob, "files", "put", doc); code != 0 || !strings.HasPrefix(stdout, "f-") {
		t.Fatalf("agentmesh files put as bob, issued at the server's start: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Credentials issued with no mesh to reach: creds says the bucket is
	// not made yet, and the client's files commands say how to make it.
	dave := filepath.Join(dir, "dave.creds")
	if _, stderr, code = runBinary(t, exec.Command(agentBinary(t), "creds", "client", "dave", "--store", store, "--nats", "nats://127.0.0.1:1", "-o", dave)); code != 0 || !strings.Contains(stderr, "mesh_files_dave is not made yet") {
		t.Fatalf("agentmesh creds client dave with no mesh: exit %d: %s", code, stderr)
	}
	if _, stderr, code = as(dave, "files", "ls"); code == 0 || !strings.Contains(stderr, "client dave has no files bucket mesh_files_dave") || !strings.Contains(stderr, "agentmesh creds client dave --nats URL") {
		t.Fatalf("agentmesh files ls as dave, with no bucket: exit %d: %s", code, stderr)
	}
	// A tenant's client gets its bucket in the tenant's account.
	carol := filepath.Join(dir, "acme-carol.creds")
	if _, stderr, code = runBinary(t, exec.Command(agentBinary(t), "creds", "--tenant", "acme", "client", "carol", "--store", store, "--nats", url, "-o", carol)); code != 0 || strings.Contains(stderr, "not made") {
		t.Fatalf("agentmesh creds --tenant acme client carol: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code = as(carol, "files", "put", doc); code != 0 || !strings.HasPrefix(stdout, "f-") {
		t.Fatalf("agentmesh files put as acme's carol: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Knowledge bases are in the shared bucket: admin's, said at once.
	if _, stderr, code = as(alice, "kb", "ls"); code == 0 || !strings.Contains(stderr, "run agentmesh kb with admin credentials") {
		t.Fatalf("agentmesh kb ls as alice: exit %d: %s", code, stderr)
	}
}
