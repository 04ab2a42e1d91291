package security_test

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/security"
)

// Keys, CA and certificate are made once and reused: credentials issued
// before a restart stay valid, and the files are the owner's only.
func TestSetupReusesWhatItMade(t *testing.T) {
	dir := t.TempDir()
	first, err := security.Setup(dir, security.TLSFiles{}, "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := first.Authority.Creds(bus.Identity{Role: bus.RoleAgent, Name: "TextAgent"}, bus.MustNames(""))
	if err != nil {
		t.Fatal(err)
	}
	ca1, _ := os.ReadFile(first.TLS.CA)
	second, err := security.Setup(dir, security.TLSFiles{})
	if err != nil {
		t.Fatal(err)
	}
	if ca2, _ := os.ReadFile(second.TLS.CA); !bytes.Equal(ca1, ca2) {
		t.Error("the CA was made again")
	}
	for _, f := range []string{"operator.nk", "account.nk", "account-signing.nk", "system.nk", "ca-key.pem", "server-key.pem"} {
		fi, err := os.Stat(filepath.Join(dir, security.Dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}
	// The user JWT is valid, issued by the account's signing key, with the
	// identity's name; the server trusts it after a restart (same keys).
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		t.Fatal(err)
	}
	var vr jwt.ValidationResults
	uc.Validate(&vr)
	if vr.IsBlocking(true) || uc.Name != "agent-TextAgent" || uc.IssuerAccount == "" || uc.Issuer == uc.IssuerAccount {
		t.Errorf("user claims %+v (%v): want a valid JWT signed by a signing key of the account", uc, vr.Errors())
	}
	raw, _ := os.ReadFile(second.TLS.Cert)
	block, _ := pem.Decode(raw)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"localhost", "mesh.example", "127.0.0.1"} {
		if err := cert.VerifyHostname(name); err != nil {
			t.Errorf("server certificate: %v", err)
		}
	}
}

// Every identity's permissions pass the JWT library's validation; admin's
// are empty (everything) and no one else's are.
func TestPermissionsValidate(t *testing.T) {
	n := bus.MustNames("")
	for _, id := range []bus.Identity{{Role: bus.RoleAdmin}, {Role: bus.RoleOrchestrator}, {Role: bus.RoleClient, Name: "alice"}, {Role: bus.RoleAgent, Name: "TextAgent"}} {
		p := security.Permissions(id, n)
		var vr jwt.ValidationResults
		p.Validate(&vr)
		if len(vr.Errors()) > 0 {
			t.Errorf("%s: %v", id.User(), vr.Errors())
		}
		if empty := len(p.Pub.Allow) == 0 && len(p.Sub.Allow) == 0; empty != (id.Role == bus.RoleAdmin) {
			t.Errorf("%s: permissions %+v", id.User(), p)
		}
	}
}
