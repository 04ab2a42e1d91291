package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
)

// TestExampleAgentServesATask builds the README's agent, runs it as its own
// process against a fresh server (nothing provisioned: the first agent
// creates the mesh), sends it a task as plain structured JSON, and stops it
// with SIGTERM.
func TestExampleAgentServesATask(t *testing.T) {
	srv := bustest.Start(t)
	bin := filepath.Join(t.TempDir(), "goagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "NATS_URL="+srv.URL())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	nc := srv.Conn(t)
	results, err := nc.SubscribeSync("mesh.result.ShoutAgent.shout-1")
	if err != nil {
		t.Fatal(err)
	}
	task := []byte(`{"specversion":"1.0","id":"shout-1","source":"test","type":"io.agentmesh.task.requested",
		"data":{"inputs":{"text":{"data_type":"TEXT","value":"hello mesh"}}}}`)
	// The task stream exists once the agent has provisioned the mesh.
	if !fixture.Within(30*time.Second, func() bool {
		msg := nats.NewMsg("mesh.task.ShoutAgent")
		msg.Header.Set("Content-Type", "application/cloudevents+json")
		msg.Data = task
		var ack *nats.Msg
		ack, err = nc.RequestMsg(msg, time.Second)
		return err == nil && len(ack.Data) > 0 && json.Valid(ack.Data) && !containsError(ack.Data)
	}) {
		t.Fatalf("the agent never created the task stream: %v", err)
	}
	msg, err := results.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("no result: %v", err)
	}
	var res struct {
		Success bool `json:"success"`
		Outputs map[string]struct {
			Value string `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		t.Fatalf("result body %s: %v", msg.Data, err)
	}
	if !res.Success || res.Outputs["text"].Value != "HELLO MESH" {
		t.Fatalf("result = %s", msg.Data)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("agent did not drain cleanly: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s of SIGTERM")
	}
}

func containsError(ack []byte) bool {
	var a struct {
		Error any `json:"error"`
	}
	return json.Unmarshal(ack, &a) == nil && a.Error != nil
}
