package security_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/security"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// mapped publishes on from as id and returns the subject the message
// arrived on at a subscriber of to (which the account maps from to).
func mapped(t *testing.T, s *securetest.Server, from, to string) string {
	t.Helper()
	sub, err := s.Admin.SubscribeSync(to)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := s.Admin.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Admin.Publish(from, []byte("x")); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("nothing published on %s arrived on %s: %v", from, to, err)
	}
	return msg.Subject
}

// A revision of the account (here a subject mapping) takes effect in the
// running server at once, and a server restarted from the same store
// still has it.
func TestReviseAccountAppliesAndPersists(t *testing.T) {
	s := securetest.Start(t)
	err := s.Sec.Authority.ReviseAccount(s.Emb.NATS(), func(ac *jwt.AccountClaims) {
		ac.AddMapping("mesh.revise.from", jwt.WeightedMapping{Subject: "mesh.revise.to"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mapped(t, s, "mesh.revise.from", "mesh.revise.to"); got != "mesh.revise.to" {
		t.Fatalf("the message arrived on %s", got)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, security.Dir, "account.jwt")); err != nil {
		t.Fatalf("the revised account is not stored: %v", err)
	}

	s.Restart(t)
	ac, err := s.Sec.Authority.AccountClaims()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ac.Mappings["mesh.revise.from"]; !ok {
		t.Fatalf("the restarted authority lost the mapping: %v", ac.Mappings)
	}
	if got := mapped(t, s, "mesh.revise.from", "mesh.revise.to"); got != "mesh.revise.to" {
		t.Fatalf("after a restart the message arrived on %s", got)
	}
	// The restarted server still trusts the account's signing key: a new
	// identity connects.
	s.Connect(t, bus.Identity{Role: bus.RoleClient, Name: "after"})
}

// A revision the account JWT cannot hold is refused with the reason, and
// nothing changes: neither the claims in use nor the stored file.
func TestReviseAccountRefusesInvalid(t *testing.T) {
	s := securetest.Start(t)
	a := s.Sec.Authority
	err := a.ReviseAccount(s.Emb.NATS(), func(ac *jwt.AccountClaims) {
		ac.AddMapping("mesh.bad from", jwt.WeightedMapping{Subject: "mesh.to"})
	})
	if err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Fatalf("got %v, want the revision refused as not valid", err)
	}
	ac, err := a.AccountClaims()
	if err != nil {
		t.Fatal(err)
	}
	if len(ac.Mappings) != 0 {
		t.Errorf("the refused mapping is in use: %v", ac.Mappings)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, security.Dir, "account.jwt")); err == nil {
		t.Error("the refused revision was stored")
	}
	// Removing the signing key is refused too: it would cut every user.
	err = a.ReviseAccount(s.Emb.NATS(), func(ac *jwt.AccountClaims) { ac.SigningKeys = jwt.SigningKeys{} })
	if err == nil || !strings.Contains(err.Error(), "signing key") {
		t.Fatalf("got %v, want removing the signing key refused", err)
	}
	s.Connect(t, bus.Identity{Role: bus.RoleClient, Name: "still"})
}

// A revision made with no server (before the first start) is what the
// server starts with.
func TestReviseAccountBeforeStart(t *testing.T) {
	dir := t.TempDir()
	sec, err := security.Setup(dir, security.TLSFiles{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sec.Authority.ReviseAccount(nil, func(ac *jwt.AccountClaims) { ac.Limits.Conn = 7 }); err != nil {
		t.Fatal(err)
	}
	again, err := security.Load(filepath.Join(dir, security.Dir))
	if err != nil {
		t.Fatal(err)
	}
	ac, err := again.AccountClaims()
	if err != nil {
		t.Fatal(err)
	}
	if ac.Limits.Conn != 7 {
		t.Errorf("a new load has a connection limit of %d, want 7", ac.Limits.Conn)
	}
}

// Removing account-signing.nk still withdraws every credential at the next
// start when the account was revised: the stored account takes the new
// signing key and keeps its revision.
func TestRotatedSigningKeyWithRevisedAccount(t *testing.T) {
	s := securetest.Start(t)
	if err := s.Sec.Authority.ReviseAccount(s.Emb.NATS(), func(ac *jwt.AccountClaims) {
		ac.AddMapping("mesh.rotate.from", jwt.WeightedMapping{Subject: "mesh.rotate.to"})
	}); err != nil {
		t.Fatal(err)
	}
	old := s.Creds(t, bus.Identity{Role: bus.RoleClient, Name: "old"})
	if err := os.Remove(filepath.Join(s.Dir, security.Dir, "account-signing.nk")); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	if nc, err := dial(s, old); err == nil {
		nc.Close()
		t.Fatal("credentials signed with the removed key connect")
	}
	if got := mapped(t, s, "mesh.rotate.from", "mesh.rotate.to"); got != "mesh.rotate.to" {
		t.Fatalf("the mapping was lost: arrived on %s", got)
	}
}
