package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/security"
)

// The shipped binary with tenants: the server provisions each tenant's
// mesh in its account; a tenant's client, with credentials from `creds
// --tenant`, calls the shared TextAgent of the mesh account directly and
// gets its answer, while the tenant's own registry has no TextAgent.
func TestBinaryTenants(t *testing.T) {
	credsDir := t.TempDir()
	url, store := startSecureServer(t, "--creds-dir", credsDir, "--issue", "agent-TextAgent",
		"--stream-max-bytes", "8MiB", "--bucket-max-bytes", "8MiB", "--files-max-bytes", "16MiB",
		"--tenant", "acme:store=256MiB,connections=20", "--tenant", "globex", "--share", "TextAgent")
	ca := filepath.Join(credsDir, "ca.pem")
	startAgentProc(t, url, "--creds", filepath.Join(credsDir, "agent-TextAgent.creds"), "--tls-ca", ca)
	alice := issueCreds(t, store, "--tenant", "acme", "client", "alice")

	stdout, stderr, code := runBinary(t, exec.Command(agentBinary(t), "task", "TextAgent", "--text", "text=hello tenant", "--param", "op=upper",
		"--direct", "--nats", url, "--creds", alice, "--tls-ca", ca, "--json"))
	if code != 0 || !strings.Contains(stdout, "HELLO TENANT") {
		t.Fatalf("agentmesh task --direct as acme's alice: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// acme's own registry: no TextAgent lives there; the mesh account's
	// registry shows it.
	stdout, stderr, code = runBinary(t, exec.Command(agentBinary(t), "agents", "--nats", url, "--creds", alice, "--tls-ca", ca))
	if code != 0 || !strings.HasPrefix(stdout, "no live agents") {
		t.Errorf("agentmesh agents as acme's alice: exit %d, want acme's empty registry\n%s\n%s", code, stdout, stderr)
	}
	meshAlice := issueCreds(t, store, "client", "alice")
	if stdout, _, _ := runBinary(t, exec.Command(agentBinary(t), "agents", "--nats", url, "--creds", meshAlice, "--tls-ca", ca)); !strings.Contains(stdout, "TextAgent") {
		t.Errorf("agentmesh agents as the mesh account's alice: %s; want TextAgent", stdout)
	}
	// The tenant's admin credentials the server keeps, and what creds
	// refuses.
	if _, _, code := runBinary(t, exec.Command(agentBinary(t), "agents", "--nats", url, "--creds",
		filepath.Join(store, security.Dir, security.TenantsDir, "globex", "creds", "admin.creds"), "--tls-ca", ca)); code != 0 {
		t.Errorf("agentmesh agents as globex's admin: exit %d", code)
	}
	if _, stderr, code := runBinary(t, exec.Command(agentBinary(t), "creds", "--tenant", "nobody", "client", "--store", store)); code == 0 || !strings.Contains(stderr, "--tenant nobody") {
		t.Errorf("creds for an unknown tenant: exit %d: %s", code, stderr)
	}
	// Revoking acme's alice: her credentials no longer connect; the mesh
	// account's alice still does.
	stdout, stderr, code = runBinary(t, exec.Command(agentBinary(t), "creds", "revoke", "--tenant", "acme", "client-alice", "--store", store, "--nats", url))
	if code != 0 || !strings.Contains(stdout, "revoked client-alice") || !strings.Contains(stdout, "--tenant acme") {
		t.Fatalf("creds revoke --tenant acme client-alice: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		creds string
		ok    bool
	}{{alice, false}, {meshAlice, true}} {
		_, stderr, code := runBinary(t, exec.Command(agentBinary(t), "agents", "--nats", url, "--creds", c.creds, "--tls-ca", ca))
		if (code == 0) != c.ok {
			t.Errorf("agentmesh agents with %s after acme's alice was revoked: exit %d: %s", filepath.Base(c.creds), code, stderr)
		}
	}
}

// --tenant specs are checked before anything starts.
func TestTenantFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "--tenant", "acme"}, "add --secure"},
		{[]string{"server", "--secure", "--tenant", "acme:disk=1GiB"}, `unknown quota "disk"`},
		{[]string{"server", "--secure", "--tenant", "acme:store=lots,streams=-1"}, `"-1" is not a count`},
		{[]string{"server", "--secure", "--tenant", "a.b"}, `tenant name "a.b"`},
		{[]string{"server", "--secure", "--share", "TextAgent"}, "give --tenant too"},
	} {
		args := append(c.args, "--store", t.TempDir(), "--port", "0")
		_, stderr, code := runBinary(t, exec.Command(agentBinary(t), args...))
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("agentmesh %s: exit %d: %s; want an error with %s", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}

// parseTenant reads any spec without panicking; what it accepts is a valid
// tenant, and every quota it names is refused or read.
func FuzzParseTenant(f *testing.F) {
	for _, s := range []string{"acme", "acme:store=20GiB,streams=50", "a:memory=1KiB,consumers=0,connections=9", "a:disk=1", "a:store", ":", "a::,", "a.b:streams=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		tenant, err := parseTenant(spec)
		if err != nil {
			if !strings.Contains(err.Error(), "--tenant") {
				t.Fatalf("error without the flag: %v", err)
			}
			return
		}
		name, _, _ := strings.Cut(spec, ":")
		if tenant.Name != name {
			t.Fatalf("%q read as tenant %q", spec, tenant.Name)
		}
		if err := tenant.Quotas.Validate(); err != nil {
			t.Fatalf("%q accepted with quotas %+v: %v", spec, tenant.Quotas, err)
		}
	})
}
