package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/security/securetest"
)

const (
	adminToken  = "admin-token-0123456789"
	clientToken = "client-token-0123456789"
)

// TestBearerTokens checks that with tokens every /api/ request but the
// document needs a known one, in the header, or as access_token on an
// event stream.
func TestBearerTokens(t *testing.T) {
	srv := securetest.Start(t) // any mesh will do; this one also proves the gateway binds as a client
	srv.ClientFiles(t, "alice")
	alice := srv.Connect(t, bus.Identity{Role: bus.RoleClient, Name: "alice"})
	m := &testMesh{spec: loadSpec(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bridge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("bridge " + r.URL.Path)) })
	gw, err := New(ctx, alice, testValidator, WithIdentity(bus.Identity{Role: bus.RoleClient, Name: "alice"}),
		WithToken(clientToken, alice, bus.Identity{Role: bus.RoleClient, Name: "alice"}), WithHandler("/a2a/", bridge))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	m.gw, m.http = gw, httptest.NewServer(gw)
	t.Cleanup(m.http.Close)

	wantError(t, "no token", m.getJSON(t, "/api/agents"), 401, CodeUnauthorized)
	wantError(t, "unknown token", m.do(t, "GET", "/api/agents", "", nil, "Authorization", "Bearer nope-nope-nope-nope"), 401, CodeUnauthorized)
	wantError(t, "basic auth", m.do(t, "GET", "/api/agents", "", nil, "Authorization", "Basic YWxpY2U6eA=="), 401, CodeUnauthorized)
	if r := m.getJSON(t, "/api/openapi.json"); r.status != 200 {
		t.Fatalf("the document needs no token: %d", r.status)
	}
	if r := m.do(t, "GET", "/api/agents", "", nil, "Authorization", "Bearer "+clientToken); r.status != 200 {
		t.Fatalf("with the token: %d %s", r.status, clip(r.body))
	}
	// A token in the address is taken on event streams only (EventSource
	// cannot send headers): elsewhere it would end up in logs and histories.
	msg := wantError(t, "access_token on a plain endpoint", m.getJSON(t, "/api/agents?access_token="+clientToken), 401, CodeUnauthorized)
	if !strings.Contains(msg, "event streams only") {
		t.Fatalf("the refusal does not say where access_token is taken: %s", msg)
	}
	wantError(t, "access_token on a POST", m.do(t, "POST", "/api/chat?access_token="+clientToken, "application/json", []byte(`{"message":"hi"}`)), 401, CodeUnauthorized)
	m.openSSE(t, "/api/events?access_token="+clientToken)
	resp, err := http.Get(m.http.URL + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the dashboard needs no token: %v %v", resp, err)
	}
	resp.Body.Close()
	// A handler mounted beside the API does its own authentication.
	gw.Handle("GET /late", bridge)
	for _, p := range []string{"/a2a/tasks", "/late"} {
		resp, err = http.Get(m.http.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "bridge "+p {
			t.Fatalf("mounted handler at %s: %d %q", p, resp.StatusCode, b)
		}
	}
}

// TestSecureMeshRoles serves a secure mesh with two tokens: one mapped to
// a client's credentials, one to admin's. The server enforces each role:
// the client may call agents and submit, but not read run state.
func TestSecureMeshRoles(t *testing.T) {
	srv := securetest.Start(t)
	clientID := bus.Identity{Role: bus.RoleClient, Name: "alice"}
	srv.ClientFiles(t, clientID.Name)
	alice := srv.Connect(t, clientID)
	meshtest.Serve(t, srv.Connect(t, bus.Identity{Role: bus.RoleAgent, Name: text.Name}), text.New(), agents.WithHeartbeat(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gw, err := New(ctx, alice, testValidator, WithIdentity(clientID),
		WithToken(clientToken, alice, clientID),
		WithToken(adminToken, srv.Admin, bus.Identity{Role: bus.RoleAdmin}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	m := &testMesh{spec: loadSpec(t), gw: gw, http: httptest.NewServer(gw)}
	t.Cleanup(m.http.Close)
	if err := gw.def.reg.Wait(ctx, text.Name, 1); err != nil {
		t.Fatal(err)
	}
	asClient := []string{"Authorization", "Bearer " + clientToken}
	asAdmin := []string{"Authorization", "Bearer " + adminToken}

	r := m.do(t, "POST", "/api/agents/TextAgent/tasks", "application/json",
		[]byte(`{"inputs":{"text":{"data_type":"TEXT","value":"secure"}},"params":{"op":"upper"}}`), asClient...)
	var ans TaskAnswer
	decode(t, r, &ans)
	if r.status != 200 || string(ans.Result.Outputs["text"].Value) != `"SECURE"` {
		t.Fatalf("client task: %d %s", r.status, clip(r.body))
	}
	// A task sent without waiting: the client reads its result, under its own subject.
	r = m.do(t, "POST", "/api/agents/TextAgent/tasks?wait=false", "application/json",
		[]byte(`{"inputs":{"text":{"data_type":"TEXT","value":"later"}},"params":{"op":"upper"}}`), asClient...)
	ans = TaskAnswer{}
	decode(t, r, &ans)
	for start := time.Now(); ; {
		r = m.do(t, "GET", "/api/agents/TextAgent/tasks/"+ans.TaskID, "", nil, asClient...)
		var got TaskAnswer
		decode(t, r, &got)
		if r.status == 200 && got.Result != nil && string(got.Result.Outputs["text"].Value) == `"LATER"` {
			break
		}
		if r.status != 202 || time.Since(start) > 10*time.Second {
			t.Fatalf("client reads its task's result: %d %s", r.status, clip(r.body))
		}
	}
	var a Agent
	decode(t, m.do(t, "GET", "/api/agents/TextAgent", "", nil, asClient...), &a)
	if a.Stats.Backlog != nil {
		t.Fatalf("a client cannot read the backlog, got %d", *a.Stats.Backlog)
	}
	wantError(t, "client reads runs", m.do(t, "GET", "/api/runs", "", nil, asClient...), 403, CodeForbidden)
	wantError(t, "client reads conversations", m.do(t, "GET", "/api/conversations", "", nil, asClient...), 403, CodeForbidden)
	wantError(t, "client reads memory", m.do(t, "GET", "/api/memory", "", nil, asClient...), 403, CodeForbidden)
	if r := m.do(t, "POST", "/api/pipelines?run_id=sec-1", "application/yaml",
		[]byte("name: s\nsteps:\n  - {id: a, agent: TextAgent, inputs: {text: \"text:x\"}}\n"), asClient...); r.status != 202 {
		t.Fatalf("client submits: %d %s", r.status, clip(r.body))
	}
	// A client follows its run's events (an ordered consumer on the events
	// stream filtered on its own, mesh.events.sec-1.*.alice) to the end.
	o, err := orchestrator.New(srv.Connect(t, bus.Identity{Role: bus.RoleOrchestrator}))
	if err != nil {
		t.Fatal(err)
	}
	meshtest.RunOrchestrator(t, o)
	events := m.openSSE(t, "/api/runs/sec-1/events?access_token="+clientToken)
	for ended := false; !ended; {
		select {
		case ev := <-events:
			ended = ev.Type == bus.TypePipelineCompleted
		case <-ctx.Done():
			t.Fatal("the client's event stream never carried its run's end")
		}
	}
	if r := m.do(t, "GET", "/api/runs", "", nil, asAdmin...); r.status != 200 {
		t.Fatalf("admin reads runs: %d %s", r.status, clip(r.body))
	}
	decode(t, m.do(t, "GET", "/api/agents/TextAgent", "", nil, asAdmin...), &a)
	if a.Stats.Backlog == nil {
		t.Fatal("admin reads the backlog: got none")
	}
	wantError(t, "admin reads an unknown run", m.do(t, "GET", "/api/runs/nope", "", nil, asAdmin...), 404, schemas.CodeNotFound)

	// The client's files are its own bucket's: an upload lands there, the
	// client reads it back; admin's gateway connection, on the shared
	// bucket, does not find it.
	r = m.do(t, "POST", "/api/files?name=mine.txt", "text/plain", []byte("alice's upload"), asClient...)
	var ref schemas.FileRef
	decode(t, r, &ref)
	if r.status != 201 || ref.Store != srv.Names.ClientFilesStore(clientID.Name) {
		t.Fatalf("client upload: %d %s; want a file of %s", r.status, clip(r.body), srv.Names.ClientFilesStore(clientID.Name))
	}
	if r = m.do(t, "GET", "/api/files/"+ref.ID+"/content", "", nil, asClient...); r.status != 200 || string(r.body) != "alice's upload" {
		t.Fatalf("client download: %d %q", r.status, r.body)
	}
	wantError(t, "admin reads alice's file in the shared bucket", m.do(t, "GET", "/api/files/"+ref.ID, "", nil, asAdmin...), 404, schemas.CodeNotFound)
}

// TestRefusalSentinels checks that the gateway's own refusals match their
// sentinels, and name the identity refused.
func TestRefusalSentinels(t *testing.T) {
	_, err := (&conn{id: bus.Identity{Role: bus.RoleClient, Name: "alice"}}).needStore()
	if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "client-alice") {
		t.Fatalf("a client's state read: %v", err)
	}
	g := &Gateway{def: &conn{}, tokens: map[string]*conn{"some-token-0123456789": {}}}
	if _, err := g.authorize(httptest.NewRequest("GET", "/api/runs", nil), false); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("no token: %v", err)
	}
}
