package a2a_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// An A2A 0.3 client (no A2A-Version header) gets the 0.3 card, methods and
// shapes.
func TestLegacy03Requests(t *testing.T) {
	r := newRig(t)
	url := r.agentURL("TextAgent")
	resp, err := http.Get(url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if card["protocolVersion"] != "0.3.0" || card["url"] != url || card["preferredTransport"] != "JSONRPC" || card["supportedInterfaces"] != nil {
		t.Fatalf("0.3 card: %v", card)
	}
	msg := map[string]any{"message": map[string]any{"kind": "message", "messageId": "m1", "role": "user", "parts": []any{
		map[string]any{"kind": "text", "text": "old client"},
		map[string]any{"kind": "data", "data": map[string]any{"params": map[string]any{"op": "upper"}}},
	}}}
	rep, _ := post(t, url, "", rpcBody("message/send", msg))
	var task struct {
		Kind   string `json:"kind"`
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Artifacts []struct {
			Parts []struct {
				Kind string `json:"kind"`
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifacts"`
		History []struct {
			Kind string `json:"kind"`
			Role string `json:"role"`
		} `json:"history"`
	}
	if rep.Error != nil || json.Unmarshal(rep.Result, &task) != nil {
		t.Fatalf("message/send: %+v", rep)
	}
	if task.Kind != "task" || task.Status.State != "completed" || task.Artifacts[0].Parts[0].Kind != "text" ||
		task.Artifacts[0].Parts[0].Text != "OLD CLIENT" || task.History[0].Role != "user" || task.History[1].Role != "agent" {
		t.Fatalf("0.3 task: %s", rep.Result)
	}
	rep, _ = post(t, url, "0.3", rpcBody("tasks/get", map[string]any{"id": task.ID}))
	if rep.Error != nil || !strings.Contains(string(rep.Result), `"state":"completed"`) {
		t.Fatalf("tasks/get: %+v %s", rep.Error, rep.Result)
	}
	rep, _ = post(t, url, "0.3", rpcBody("tasks/cancel", map[string]any{"id": task.ID}))
	if rep.Error == nil || rep.Error.Code != -32002 {
		t.Fatalf("tasks/cancel of an ended task: %+v", rep)
	}
	events := legacyStream(t, url, msg)
	var kinds []string
	for _, ev := range events {
		k := ev["kind"].(string)
		if k == "status-update" {
			st := ev["status"].(map[string]any)
			k += ":" + st["state"].(string)
			if ev["final"] == true {
				k += ":final"
			}
		}
		kinds = append(kinds, k)
	}
	if got := strings.Join(kinds, " "); got != "task artifact-update status-update:completed:final" {
		t.Fatalf("0.3 stream: %s", got)
	}
}
