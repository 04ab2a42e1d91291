package security_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/security"
	"github.com/agentmesh/agentmesh/security/securetest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustJS(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func msgs(t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	info, err := s.Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// Two tenants on one secure server: each is a mesh of its own, and nothing
// of globex's (its events, requests, state, streams, buckets) is
// addressable from acme, not even by acme's admin. Both tenants have a
// client alice: the same subjects, in two accounts.
func TestTenantsIsolated(t *testing.T) {
	s := securetest.StartTenants(t, nil, security.Tenant{Name: "acme"}, security.Tenant{Name: "globex"})
	ctx := ctxT(t)
	aliceID := bus.Identity{Role: bus.RoleClient, Name: "alice"}
	own := s.Names.ForClient("alice")
	aAdmin, aRes := s.ProvisionTenant(t, "acme", bus.ProvisionOptions{})
	bAdmin, bRes := s.ProvisionTenant(t, "globex", bus.ProvisionOptions{})
	aJS, bJS := mustJS(t, aAdmin), mustJS(t, bAdmin)

	// Everything acme's admin may see: a subscription on every subject.
	all, err := aAdmin.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	if err := aAdmin.Flush(); err != nil {
		t.Fatal(err)
	}

	// globex's mesh at work: an event of its alice's conversation, a
	// request, conversation state, a stream and a bucket of its own.
	event := own.Events("c1", "task")
	secret := []byte("globex-secret")
	if _, err := bJS.Publish(ctx, event, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := bRes.Conversations.Put(ctx, "c1", secret); err != nil {
		t.Fatal(err)
	}
	bPriv, err := bJS.CreateStream(ctx, jetstream.StreamConfig{Name: "GLOBEX_PRIVATE", Subjects: []string{"globex.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bJS.Publish(ctx, "globex.ledger", secret); err != nil {
		t.Fatal(err)
	}
	bKV, err := bJS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "globex_secrets"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bKV.Put(ctx, "k", secret); err != nil {
		t.Fatal(err)
	}
	bClient := s.ConnectTenant(t, "globex", aliceID)
	if err := bClient.Publish(own.ChatRequest(), secret); err != nil {
		t.Fatal(err)
	}
	if err := bClient.Flush(); err != nil { // globex's publishes are processed
		t.Fatal(err)
	}

	// Core NATS: acme's admin, on '>', sees its own marker and nothing
	// of globex's before it (a message to it would have been queued first).
	if err := aAdmin.Publish("acme.marker", nil); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := all.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("acme's admin never got its own marker: %v", err)
		}
		if bytes.Contains(m.Data, secret) {
			t.Fatalf("acme's admin received globex's message on %s", m.Subject)
		}
		if m.Subject == "acme.marker" {
			break
		}
	}
	if err := all.Unsubscribe(); err != nil {
		t.Fatal(err)
	}

	// JetStream: acme's streams of the same names are its own, empty.
	if n := msgs(t, aRes.Events); n != 0 {
		t.Errorf("acme's %s holds %d messages; want 0 (globex's event is in globex's)", s.Names.EventsStream(), n)
	}
	if n := msgs(t, bRes.Events); n != 1 {
		t.Errorf("globex's %s holds %d messages; want its 1", s.Names.EventsStream(), n)
	}
	if _, err := aRes.Conversations.Get(ctx, "c1"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("acme's conversations bucket, key c1: %v; want key not found", err)
	}
	// globex's own stream and bucket do not exist for acme's admin.
	if _, err := aJS.Stream(ctx, "GLOBEX_PRIVATE"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("acme's admin looking up GLOBEX_PRIVATE: %v; want stream not found", err)
	}
	if _, err := aJS.KeyValue(ctx, "globex_secrets"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("acme's admin binding globex_secrets: %v; want bucket not found", err)
	}
	if _, err := aAdmin.Request("globex.ledger", []byte("forged"), 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("acme's admin publishing into globex.ledger: %v; want no responders", err)
	}
	// A direct get by API subject answers about acme's account only.
	if _, err := aAdmin.Request("$JS.API.DIRECT.GET.KV_globex_secrets.$KV.globex_secrets.k", nil, 2*time.Second); err == nil {
		t.Error("acme's admin got an answer from globex_secrets' direct get")
	}
	if n := msgs(t, bPriv); n != 1 {
		t.Errorf("GLOBEX_PRIVATE holds %d messages after acme's publish; want its 1", n)
	}

	// acme's alice: her events consumer sees none of globex's alice's,
	// and her request lands in acme's requests stream, not globex's.
	aClient := s.ConnectTenant(t, "acme", aliceID)
	cJS := mustJS(t, aClient)
	cons, err := cJS.CreateConsumer(ctx, s.Names.EventsStream(), jetstream.ConsumerConfig{FilterSubject: own.AllEvents(), DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := cons.Info(ctx); err != nil || info.NumPending != 0 {
		t.Errorf("acme's alice's events consumer: %v pending (err %v); want 0", info.NumPending, err)
	}
	before := msgs(t, bRes.Requests)
	if _, err := cJS.Publish(ctx, own.ChatRequest(), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if n := msgs(t, bRes.Requests); n != before {
		t.Errorf("globex's requests stream went from %d to %d messages on acme's alice's request", before, n)
	}
	if n := msgs(t, aRes.Requests); n != 1 {
		t.Errorf("acme's requests stream holds %d messages; want acme's alice's 1", n)
	}
}

// Each tenant's quotas are its account's: acme filling its store, using
// its one stream and its connections leaves globex's untouched.
func TestTenantQuotasSeparate(t *testing.T) {
	const store = 1 << 20
	s := securetest.StartTenants(t, nil,
		security.Tenant{Name: "acme", Quotas: security.Quotas{Store: store, Streams: 1, Connections: 1}},
		security.Tenant{Name: "globex", Quotas: security.Quotas{Store: store}})
	ctx := ctxT(t)
	admin := bus.Identity{Role: bus.RoleAdmin}
	aJS, bJS := mustJS(t, s.ConnectTenant(t, "acme", admin)), mustJS(t, s.ConnectTenant(t, "globex", admin))
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	fill := jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill.>"}}
	if _, err := aJS.CreateStream(ctx, fill); err != nil {
		t.Fatal(err)
	}
	var full error
	for i := 0; i < 2*store/len(chunk) && full == nil; i++ {
		_, full = aJS.Publish(ctx, "fill.x", chunk)
	}
	var apiErr *jetstream.APIError
	if !errors.As(full, &apiErr) || !strings.Contains(apiErr.Description, "resource limits exceeded") {
		t.Fatalf("filling acme's %d-byte store: %v; want JetStream refusing for lack of storage", store, full)
	}
	if _, err := aJS.CreateStream(ctx, jetstream.StreamConfig{Name: "MORE", Subjects: []string{"more.>"}}); err == nil {
		t.Error("acme made a second stream past its quota of 1")
	}
	// A second connection of acme is refused; globex still connects.
	if _, err := (bus.ConnectOptions{URL: s.URL(), CredsFile: s.TenantCreds(t, "acme", admin), TLSCA: s.CA()}).Connect(ctx); err == nil || !strings.Contains(strings.ToLower(err.Error()), "connections") {
		t.Errorf("acme's second connection: %v; want refused for the account's connection limit", err)
	}
	s.ConnectTenant(t, "globex", bus.Identity{Role: bus.RoleClient, Name: "alice"})

	// globex: a stream of the same name, filled to half its own store,
	// and more streams.
	b, err := bJS.CreateStream(ctx, fill)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < store/2/len(chunk); i++ {
		if _, err := bJS.Publish(ctx, "fill.x", chunk); err != nil {
			t.Fatalf("globex's publish %d with acme's store full: %v", i, err)
		}
	}
	if n := msgs(t, b); n != store/2/uint64(len(chunk)) {
		t.Errorf("globex's FILL holds %d messages; want %d", n, store/2/len(chunk))
	}
	if _, err := bJS.CreateStream(ctx, jetstream.StreamConfig{Name: "MORE", Subjects: []string{"more.>"}}); err != nil {
		t.Errorf("globex's second stream: %v", err)
	}
}

// A tenant's client calls a shared agent of the mesh account through the
// import of its direct-call endpoint and gets its answer; an agent that is
// not shared does not exist for the tenant.
func TestTenantCallsSharedAgent(t *testing.T) {
	s := securetest.StartTenants(t, []string{text.Name}, security.Tenant{Name: "acme"})
	for _, a := range []agents.Agent{text.New(), agents.Func(schemas.AgentContract{
		Name: "Private", Capability: schemas.CapTransformation, Description: "not shared",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
		return schemas.AgentResult{Success: true}, nil
	})} {
		nc := s.Connect(t, bus.Identity{Role: bus.RoleAgent, Name: a.Contract().Name})
		meshtest.Serve(t, nc, a)
	}
	s.ProvisionTenant(t, "acme", bus.ProvisionOptions{})
	alice := s.ConnectTenant(t, "acme", bus.Identity{Role: bus.RoleClient, Name: "alice"})
	call := func(agent string) (*nats.Msg, error) {
		subj, err := s.Names.Call(agent)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := bus.NewEvent(bus.TypeTaskRequested, "/test/acme", upper("hello tenant"))
		if err != nil {
			t.Fatal(err)
		}
		msg, err := bus.Encode(subj, ev)
		if err != nil {
			t.Fatal(err)
		}
		return alice.RequestMsg(msg, 10*time.Second)
	}
	reply, err := call(text.Name)
	if err != nil {
		t.Fatalf("acme's alice calling the shared %s: %v", text.Name, err)
	}
	ev, err := bus.Decode(reply)
	if err != nil {
		t.Fatal(err)
	}
	var res schemas.AgentResult
	if err := json.Unmarshal(ev.Data, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Success || !strings.Contains(string(res.Outputs["text"].Value), "HELLO TENANT") {
		t.Fatalf("the shared agent's answer: %+v %+v", res, res.Error)
	}
	if _, err := call("Private"); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("acme's alice calling the unshared Private: %v; want no responders", err)
	}
}

// SetTenants checks what it is given, all at once, and the mesh account
// exports exactly the shared endpoints, withdrawn by a start without them.
func TestSetTenants(t *testing.T) {
	s := securetest.Start(t)
	a := s.Sec.Authority
	err := a.SetTenants(s.Names, []string{"bad agent"}, security.Tenant{Name: "a/b"}, security.Tenant{Name: "x", Quotas: security.Quotas{Store: -1}}, security.Tenant{Name: "x"})
	for _, want := range []string{`"a/b"`, "--max-store -1", `"x" is given twice`, `"bad agent"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SetTenants with bad input: %v; want it to name %s", err, want)
		}
	}
	if err := a.SetTenants(s.Names, []string{"TextAgent"}); err == nil || !strings.Contains(err.Error(), "--tenant") {
		t.Errorf("sharing without tenants: %v; want an error asking for --tenant", err)
	}
	exports := func() []string {
		ac, err := a.AccountClaims()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ac.Exports {
			if e.Type == jwt.Service {
				out = append(out, string(e.Subject))
			}
		}
		return out
	}
	if err := a.SetTenants(s.Names, []string{"TextAgent", security.ShareAll}, security.Tenant{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if got := exports(); len(got) != 1 || got[0] != "mesh.call.*" {
		t.Errorf("exports sharing every agent: %v; want [mesh.call.*]", got)
	}
	if _, err := a.TenantCreds("nobody", bus.Identity{Role: bus.RoleAdmin}, s.Names); err == nil || !strings.Contains(err.Error(), "--tenant nobody") {
		t.Errorf("credentials of an unknown tenant: %v; want an error naming --tenant nobody", err)
	}
	if err := a.SetTenants(s.Names, nil, security.Tenant{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if got := exports(); len(got) != 0 {
		t.Errorf("exports after a start sharing nothing: %v", got)
	}
}

// A tenant's identity is revoked in its tenant's account only: its
// connections close and its credentials are refused, now and after a
// restart; the same identity of another tenant and of the mesh account is
// untouched.
func TestRevokeTenantIdentity(t *testing.T) {
	s := securetest.StartTenants(t, nil, security.Tenant{Name: "acme"}, security.Tenant{Name: "globex"})
	serveRevocations(t, s)
	a := s.Sec.Authority
	alice := bus.Identity{Role: bus.RoleClient, Name: "alice"}
	old := s.TenantCreds(t, "acme", alice)
	_, errs := watch(t, s, old)
	others := []*nats.Conn{}
	for _, path := range []string{s.TenantCreds(t, "globex", alice), s.Creds(t, alice)} {
		nc, _ := watch(t, s, path)
		others = append(others, nc)
	}
	reply, err := a.RevokeTenant(context.Background(), s.Admin, "acme", alice.User())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Keys != 1 || reply.User != alice.User() {
		t.Errorf("reply %+v; want acme's alice's 1 key revoked", reply)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrAuthRevoked) {
			t.Fatalf("acme's alice was told %v; want %v", err, nats.ErrAuthRevoked)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("acme's alice was not disconnected")
	}
	for i, nc := range others {
		if err := nc.Flush(); err != nil {
			t.Errorf("alice #%d (globex's, the mesh account's) lost her connection: %v", i, err)
		}
	}
	if nc, err := dial(s, old); !errors.Is(err, bus.ErrAuth) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("acme's revoked alice connects (err %v)", err)
	}
	fresh := s.TenantCreds(t, "acme", alice)
	s.Restart(t)
	if nc, err := dial(s, old); !errors.Is(err, bus.ErrAuth) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("after a restart acme's revoked alice connects (err %v)", err)
	}
	nc, err := dial(s, fresh)
	if err != nil {
		t.Fatalf("acme's alice issued after the revocation, after a restart: %v", err)
	}
	nc.Close()

	serveRevocations(t, s)
	for _, c := range []struct {
		tenant, user, code string
	}{{"nobody", alice.User(), schemas.CodeNotFound}, {"acme", "admin", schemas.CodeForbidden}} {
		_, err := a.RevokeTenant(context.Background(), s.Admin, c.tenant, c.user)
		var re *schemas.ResultError
		if !errors.As(err, &re) || re.Code != c.code || !strings.Contains(re.Message, "--tenant") {
			t.Errorf("revoking %s of tenant %s: %v; want %s naming --tenant", c.user, c.tenant, err, c.code)
		}
	}
}
