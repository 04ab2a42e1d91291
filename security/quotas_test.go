package security_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/security"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// A connection past the account's connection quota is refused with an
// error that names the limit.
func TestQuotaConnections(t *testing.T) {
	s := securetest.Start(t)
	if err := s.Sec.Authority.SetQuotas(s.Emb.NATS(), security.Quotas{Connections: 2}); err != nil {
		t.Fatal(err)
	}
	s.Connect(t, bus.Identity{Role: bus.RoleClient, Name: "one"}) // with admin, two
	nc, err := dial(s, s.Creds(t, bus.Identity{Role: bus.RoleClient, Name: "two"}))
	if err == nil {
		nc.Close()
		t.Fatal("a third connection was let in under a quota of two")
	}
	if !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) || !strings.Contains(err.Error(), "--max-connections") {
		t.Fatalf("got %v, want the account's connection limit named", err)
	}
	// Lifting the quota lets it in.
	if err := s.Sec.Authority.SetQuotas(s.Emb.NATS(), security.Quotas{}); err != nil {
		t.Fatal(err)
	}
	s.Connect(t, bus.Identity{Role: bus.RoleClient, Name: "two"})
}

// Past the account's JetStream storage quota a publish is refused as
// backlog_full naming the account's limits; past its stream quota a new
// stream is refused.
func TestQuotaJetStream(t *testing.T) {
	s := securetest.Start(t)
	ctx := context.Background()
	js, err := jetstream.New(s.Admin)
	if err != nil {
		t.Fatal(err)
	}
	info, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := security.Quotas{Store: int64(info.Store) + 64<<10, Streams: int64(info.Streams)}
	if err := s.Sec.Authority.SetQuotas(s.Emb.NATS(), q); err != nil {
		t.Fatal(err)
	}
	subject, err := s.Names.Task("Quota")
	if err != nil {
		t.Fatal(err)
	}
	var full error
	for i := 0; i < 64 && full == nil; i++ {
		_, full = bus.Publish(ctx, js, &nats.Msg{Subject: subject, Data: make([]byte, 4<<10)})
	}
	var re *schemas.ResultError
	if !errors.As(full, &re) || re.Code != schemas.CodeBacklogFull || !strings.Contains(full.Error(), "the account's JetStream limits") {
		t.Fatalf("past the storage quota: %v, want backlog_full at the account's limits", full)
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "EXTRA", Subjects: []string{"extra.>"}})
	const maximumStreams = 10027 // the server's JSMaximumStreamsLimitErr
	if api, ok := errors.AsType[*jetstream.APIError](err); !ok || api.ErrorCode != maximumStreams {
		t.Fatalf("a stream past the quota of %d: %v, want code %d", q.Streams, err, maximumStreams)
	}
}

// Negative quotas are refused, each named.
func TestQuotasValidate(t *testing.T) {
	err := security.Quotas{Connections: -1, Store: -2}.Validate()
	if err == nil || !strings.Contains(err.Error(), "--max-connections -1") || !strings.Contains(err.Error(), "--max-store -2") {
		t.Fatalf("got %v", err)
	}
}

// Quotas equal to the account's change nothing: no revision is stored.
func TestSetQuotasUnchangedStoresNothing(t *testing.T) {
	dir := t.TempDir()
	sec, err := security.Setup(dir, security.TLSFiles{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sec.Authority.SetQuotas(nil, security.Quotas{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, security.Dir, "account.jwt")); err == nil {
		t.Fatal("quotas of none on an account without limits revised it")
	}
	q := security.Quotas{Connections: 10, Store: 1 << 30, Streams: 40}
	if err := sec.Authority.SetQuotas(nil, q); err != nil {
		t.Fatal(err)
	}
	ac, err := sec.Authority.AccountClaims()
	if err != nil {
		t.Fatal(err)
	}
	if ac.Limits.Conn != 10 || ac.Limits.DiskStorage != 1<<30 || ac.Limits.Streams != 40 || ac.Limits.MemoryStorage != -1 || ac.Limits.Consumer != -1 {
		t.Fatalf("limits %+v, want the quotas and no limit elsewhere", ac.Limits)
	}
}
