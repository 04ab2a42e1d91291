package security_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// The identities with the longest names bus allows, on a mesh with the
// longest prefix, connect to a secure server: their user JWTs (the
// permissions name the agent in about twenty subjects) fit its control
// line, which NATS's default of 4 KiB did not hold.
func TestLongestIdentitiesConnect(t *testing.T) {
	s := securetest.Start(t)
	names := bus.MustNames(strings.Repeat("p", 32))
	long := strings.Repeat("A", 64)
	for _, id := range []bus.Identity{{Role: bus.RoleAgent, Name: long}, {Role: bus.RoleClient, Name: long}, {Role: bus.RoleOrchestrator}} {
		creds, err := s.Sec.Authority.Creds(id, names)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "id.creds")
		if err := os.WriteFile(path, creds, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := bus.ConnectOptions{URL: s.URL(), CredsFile: path, TLSCA: s.CA(), Name: id.User()}
		nc, err := opts.Connect(context.Background())
		if err != nil {
			t.Fatalf("%s (credentials of %d bytes) cannot connect: %v", id.User(), len(creds), err)
		}
		nc.Close()
	}
}
