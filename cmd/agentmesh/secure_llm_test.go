package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// writerConfig is a PromptAgent with two TEXT outputs: its answer is
// structured, so an answer that is not JSON is asked again (a second model
// call).
const writerConfig = `name: Writer
description: Writes a title and a body.
capability: GENERATION
system_prompt: Write.
inputs:
  - {name: text, data_type: TEXT, required: true}
outputs:
  - {name: title, data_type: TEXT}
  - {name: body, data_type: TEXT}
`

// A PromptAgent run as its own process on a secure mesh (`agentmesh agent
// --config` with the agent's credentials from `agentmesh server --secure
// --issue`) keeps its task's budget and the mesh's rate limit in the LLM
// bucket: a task with a budget of 3000 tokens spends it on its first model
// call and fails budget_exceeded without the second; under a declared
// limit of 2 requests an hour the next task's call goes through and the
// third's is refused. The model server sees two requests.
func TestBinarySecurePromptAgentBudgetAndRateLimit(t *testing.T) {
	credsDir := t.TempDir()
	url, store := startSecureServer(t, "--creds-dir", credsDir, "--issue", "agent-Writer")
	ca := filepath.Join(credsDir, "ca.pem")
	srv := llmtest.New(t,
		llmtest.Reply{Content: "not JSON", Usage: schemas.Tokens{Prompt: 2500, Completion: 500}},
		llmtest.Reply{Content: `{"title": "t", "body": "b"}`, Usage: schemas.Tokens{Prompt: 100, Completion: 20}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := bus.MustNames("")
	admin := connectAs(t, url, issueCreds(t, store, "admin"), ca)
	kv, err := admin.KeyValue(ctx, names.LLMBucket())
	if err != nil {
		t.Fatal(err)
	}
	limits := llm.RateLimits{Window: llm.Duration(time.Hour), Models: map[string]llm.RateLimit{"test-model": {Requests: 2}}}
	if err := llm.DeclareRateLimits(ctx, kv, limits); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "writer.yaml")
	if err := os.WriteFile(config, []byte(writerConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(agentBinary(t), "agent", "--config", config, "--nats", url, "--creds", filepath.Join(credsDir, "agent-Writer.creds"), "--tls-ca", ca,
		"--heartbeat", agentTestHeartbeat.String(), "--max-deliver", "1")
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=test-key", "AGENTMESH_MODEL=test-model")
	agent := proctest.Start(t, cmd, agentReady)
	agent.WaitReady(t)

	alice := connectAs(t, url, issueCreds(t, store, "client", "alice"), ca)
	d := client.NewDispatcher(alice, names, "test/client-alice")
	call := func(i int, budget *schemas.Budget) client.Result {
		t.Helper()
		meta := client.DispatchMeta{TaskID: fmt.Sprintf("t-writer-%d-%d", i, time.Now().UnixNano())}
		meta.ReplyTo = names.ClientResult("Writer", "alice", meta.TaskID)
		task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("nats", "test")}, Budget: budget, TimeoutMS: 5000}
		if _, err := d.Dispatch(ctx, "Writer", task, meta); err != nil {
			t.Fatal(err)
		}
		res, err := d.Await(ctx, meta.ReplyTo, meta.TaskID)
		if err != nil {
			t.Fatalf("task %d: %v\nagent:\n%s", i, err, agent.Stderr)
		}
		return res
	}

	res := call(1, &schemas.Budget{Tokens: 3000})
	if e := res.Result.Error; res.Result.Success || e == nil || e.Code != schemas.CodeBudgetExceeded || !strings.Contains(e.Message, "spent 3000 tokens") {
		t.Fatalf("task with a budget of 3000 tokens: %+v %+v; want failed %s, having spent 3000 tokens\nagent:\n%s", res.Result, e, schemas.CodeBudgetExceeded, agent.Stderr)
	}
	ledger, err := kv.Get(ctx, "budget.task."+res.Event.Ext(bus.ExtTaskID))
	if err != nil {
		t.Fatalf("the task's ledger: %v", err)
	}
	var spent llm.Spend
	if err := json.Unmarshal(ledger.Value(), &spent); err != nil || spent.Tokens != 3000 {
		t.Fatalf("the task's ledger holds %s (%v); want 3000 tokens", ledger.Value(), err)
	}
	if res = call(2, nil); !res.Result.Success {
		t.Fatalf("second task, within the rate limit: %+v %+v\nagent:\n%s", res.Result, res.Result.Error, agent.Stderr)
	}
	res = call(3, nil)
	if e := res.Result.Error; res.Result.Success || e == nil || !strings.Contains(e.Message, "limit of model test-model (2 requests a window)") {
		t.Fatalf("third task, past the rate limit: %+v %+v; want it refused naming the limit\nagent:\n%s", res.Result, e, agent.Stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("the model server got %d requests; want 2", n)
	}
	if _, err := kv.Get(ctx, "rate.model.openai.test-model"); err != nil {
		t.Fatalf("the rate limit's slots: %v", err)
	}
}

// connectAs connects with a credentials file and the CA, as every
// agentmesh process does, until the test ends.
func connectAs(t *testing.T, url, creds, ca string) jetstream.JetStream {
	t.Helper()
	opts := bus.ConnectOptions{URL: url, CredsFile: creds, TLSCA: ca}
	nc, err := opts.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
