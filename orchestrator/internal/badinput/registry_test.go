package badinput

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// announcement is a valid announcement of agent, for cases to break.
func announcement(agent string) map[string]any {
	return map[string]any{
		"contract": map[string]any{"name": agent, "capability": "ANALYSIS", "description": "counts things",
			"outputs": []any{map[string]any{"name": "n", "data_type": "TEXT"}}},
		"instance": map[string]any{"id": "i1", "concurrency": 1},
	}
}

// announce puts value under <agent>.i1 in the agents bucket, as an agent
// keeping its registry key alive does; the refusal is read on
// mesh.events.<agent>.registry.
func announce(agent func(id string) string, value func(agent string) []byte) func(*testing.T, *shared, string) sent {
	return func(t *testing.T, s *shared, id string) sent {
		a := agent(id)
		msg := &nats.Msg{Subject: "$KV." + s.names.AgentsBucket() + "." + a + ".i1", Data: value(a), Header: nats.Header{}}
		return sent{msg: msg, stream: s.names.EventsStream(), answer: s.names.Events(a, "registry"),
			types: []string{bus.TypeAgentRefused}, agents: []string{a}}
	}
}

// agentName makes an agent name of a case id ("bad-12" -> "Bad_12").
func agentName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return "A" + string(b)
}

// broken returns a value maker that changes one part of a valid
// announcement.
func broken(change func(ann map[string]any)) func(string) []byte {
	return func(agent string) []byte {
		ann := announcement(agent)
		change(ann)
		return []byte(mustJSON(ann))
	}
}

func contractOf(ann map[string]any) map[string]any { return ann["contract"].(map[string]any) }

func registryCases() []badCase {
	var cs []badCase
	add := func(name string, value func(string) []byte) {
		cs = append(cs, badCase{name: "registry/" + name, kind: "registry", code: schemas.CodeInvalidContract, send: announce(agentName, value)})
	}
	add("value not JSON", func(string) []byte { return []byte("hello") })
	add("value a JSON array", func(string) []byte { return []byte(`[1,2]`) })
	add("contract without a capability", broken(func(a map[string]any) { delete(contractOf(a), "capability") }))
	add("contract without a description", broken(func(a map[string]any) { contractOf(a)["description"] = "" }))
	add("contract names another agent", broken(func(a map[string]any) { contractOf(a)["name"] = "TextAgent" }))
	add("output of an unknown data type", broken(func(a map[string]any) {
		contractOf(a)["outputs"] = []any{map[string]any{"name": "n", "data_type": "NOPE"}}
	}))
	add("input name not an identifier", broken(func(a map[string]any) {
		contractOf(a)["inputs"] = []any{map[string]any{"name": "a b", "data_type": "TEXT"}}
	}))
	add("params schema that does not compile", broken(func(a map[string]any) { contractOf(a)["params"] = map[string]any{"type": 7} }))
	add("negative timeout", broken(func(a map[string]any) { contractOf(a)["timeout_ms"] = -5 }))
	add("declares the built-in TEXT", broken(func(a map[string]any) {
		contractOf(a)["data_types"] = []any{map[string]any{"name": "TEXT", "description": "mine"}}
	}))
	add("declares an unknown merge rule", broken(func(a map[string]any) {
		contractOf(a)["data_types"] = []any{map[string]any{"name": "SCORES", "description": "s", "merge": "zip"}}
	}))
	add("declared schema that does not compile", broken(func(a map[string]any) {
		contractOf(a)["data_types"] = []any{map[string]any{"name": "SCORES", "description": "s", "schema": map[string]any{"type": "nope"}}}
	}))
	return cs
}

// goodAnnouncement puts a valid announcement under a fresh agent name and
// waits for the orchestrator's registry to list it.
func (s *shared) goodAnnouncement(t *testing.T) {
	t.Helper()
	agent := agentName(s.id("good"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, _ := json.Marshal(announcement(agent))
	if _, err := s.m.Res.Agents.Put(ctx, agent+".i1", raw); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.m.Res.Agents.Delete(context.Background(), agent+".i1") }()
	if err := s.o.Registry().Wait(ctx, agent, 1); err != nil {
		t.Fatalf("the next good announcement was not listed: %v", err)
	}
}
