package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

const agentName = "NodeWordCount"

// slotWordCount is where the test's router puts TEXT values hinted
// "wordcount": proof that routing follows the declared hint.
const slotWordCount = "current_wordcount"

// TestNodeAgentAndClient runs the Node.js agent and client as separate
// processes against an embedded mesh with an in-process orchestrator: the
// agent must appear in the registry (and in `agentmesh agents`) with its
// contract, serve a step of a Go-run pipeline whose outputs are routed into
// run state by type and hint, reject bad tasks with the right error codes,
// answer a chat turn submitted by the Node client, and depart on SIGTERM.
func TestNodeAgentAndClient(t *testing.T) {
	nodeBin, errNode := exec.LookPath("node")
	npmBin, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipping the Node.js example: node and npm are not on PATH (install Node.js 20 or later to run it; CI does)")
	}
	npmInstall(t, npmBin)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := bustest.Start(t)
	res := srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)

	o := startOrchestrator(t, srv, res)
	agent := startProcess(t, nodeBin, "agent.js", srv.URL())

	waitCtx, waitCancel := context.WithTimeout(ctx, 30*time.Second)
	if err := o.Registry().Wait(waitCtx, agentName, 1); err != nil {
		waitCancel()
		t.Fatalf("the Node agent never appeared in the registry: %v\nagent output:\n%s", err, agent.Out.String())
	}
	waitCancel()

	var instanceID string
	t.Run("registry", func(t *testing.T) {
		info, ok := o.Registry().Lookup(agentName)
		if !ok || len(info.Instances) != 1 {
			t.Fatalf("Lookup(%s) = %+v, %v; want one live instance", agentName, info, ok)
		}
		inst := info.Instances[0]
		instanceID = inst.ID
		if inst.PID != agent.Cmd.Process.Pid {
			t.Errorf("instance pid %d, want the node process %d", inst.PID, agent.Cmd.Process.Pid)
		}
		c := info.Contract
		if err := c.Validate(); err != nil {
			t.Errorf("the announced contract fails Validate: %v", err)
		}
		if c.Capability != schemas.CapAnalysis || c.TimeoutMS != 30000 {
			t.Errorf("capability %q timeout %d, want ANALYSIS and 30000", c.Capability, c.TimeoutMS)
		}
		in, ok := c.Input("documents")
		if !ok || in.DataType != schemas.TypeFileIDs || in.ContentTypeHint != schemas.ContentDocuments {
			t.Errorf("input documents = %+v, want FILE_IDS/documents", in)
		}
		if out, ok := c.Output("report"); !ok || out.DataType != schemas.TypeText || out.ContentTypeHint != "wordcount" {
			t.Errorf("output report = %+v, want TEXT/wordcount", out)
		}
		if out, ok := c.Output("counts"); !ok || out.DataType != schemas.TypeAnalysisResult {
			t.Errorf("output counts = %+v, want ANALYSIS_RESULT", out)
		}
		if err := c.ValidateParams(map[string]any{"top": 0}); err == nil {
			t.Errorf("the announced params schema accepts top=0; want minimum 1")
		}
		// The registry key is <agent>.<instance> and holds the announcement.
		e, err := res.Agents.Get(ctx, agentName+"."+inst.ID)
		if err != nil {
			t.Fatalf("registry key %s.%s: %v", agentName, inst.ID, err)
		}
		if err := schemas.ValidateJSON(schemas.SchemaAnnouncement, e.Value()); err != nil {
			t.Errorf("registry value fails announcement.schema.json: %v", err)
		}
		// mesh.registry.query is answered with an announced event.
		nc := srv.Conn(t)
		reply, err := nc.Request(names.RegistryQuery(), nil, 5*time.Second)
		if err != nil {
			t.Fatalf("registry query: %v", err)
		}
		ev, err := bus.Decode(reply)
		if err != nil || ev.Type != bus.TypeAgentAnnounced {
			t.Fatalf("registry query reply: type %q, err %v", ev.Type, err)
		}
		if err := schemas.ValidateJSON(schemas.SchemaAnnouncement, ev.Data); err != nil {
			t.Errorf("registry query reply fails announcement.schema.json: %v", err)
		}
	})

	t.Run("agentmesh agents", func(t *testing.T) {
		bin := buildAgentmesh(t)
		out, err := exec.CommandContext(ctx, bin, "--nats", srv.URL(), "--json", "agents").Output()
		if err != nil {
			t.Fatalf("agentmesh agents: %v\n%s", err, exitStderr(err))
		}
		var list []client.AgentInfo
		if err := json.Unmarshal(out, &list); err != nil {
			t.Fatalf("agentmesh agents --json printed %q: %v", out, err)
		}
		for _, a := range list {
			if a.Contract.Name == agentName {
				if a.Contract.Capability != schemas.CapAnalysis || len(a.Instances) != 1 || len(a.Contract.Outputs) != 3 ||
					len(a.Contract.DataTypes) != 1 || a.Contract.DataTypes[0].Merge != "sum" {
					t.Errorf("agentmesh agents lists %+v", a)
				}
				return
			}
		}
		t.Errorf("agentmesh agents does not list %s: %s", agentName, out)
	})

	t.Run("pipeline step routed by type and hint", func(t *testing.T) {
		files := resolvers.NewObjectStore(res.Files)
		a := store(ctx, t, files, "a.txt", "the quick brown fox jumps over the lazy dog")
		b := store(ctx, t, files, "b.txt", "mesh agents count words, and words count")
		spec := client.NewPipeline("node-wordcount").
			SeedDocuments(a, b).
			Step("count", agentName).Param("top", 2).
			MustBuild()
		runID, err := client.SubmitPipeline(ctx, js, names, spec, "", "examples/node test")
		if err != nil {
			t.Fatal(err)
		}
		run := waitRun(ctx, t, o, runID, agent)
		if run.Status != schemas.RunCompleted {
			t.Fatalf("run %s ended %s: %s (step: %+v)\nagent output:\n%s", runID, run.Status, run.Error, run.Steps["count"], agent.Out.String())
		}
		analysis, ok := run.State.Slots[route.SlotAnalysis]
		if !ok || analysis.DataType != schemas.TypeAnalysisResult || analysis.Source != agentName {
			t.Fatalf("slot %s = %+v, want the agent's ANALYSIS_RESULT", route.SlotAnalysis, analysis)
		}
		var counts schemas.AnalysisResult
		if err := analysis.Decode(&counts); err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, it := range counts.Items {
			got[it.ID] = it.Features["words"]
		}
		if got[a] != 9 || got[b] != 7 || len(got) != 2 {
			t.Errorf("word counts %v, want %s: 9 and %s: 7", got, a, b)
		}
		for _, it := range counts.Items {
			if it.ID == b && strings.Join(it.Labels, ",") != "count,words" {
				t.Errorf("top words of %s = %v, want [count words]", b, it.Labels)
			}
		}
		report, ok := run.State.Slots[slotWordCount]
		if !ok || report.DataType != schemas.TypeText || report.ContentTypeHint != "wordcount" {
			t.Fatalf("slot %s = %+v, want TEXT/wordcount", slotWordCount, report)
		}
		text, _ := report.Text()
		if !strings.Contains(text, a+": 9 words") {
			t.Errorf("report %q does not count %s", text, a)
		}
		if v, ok := run.State.Slots[route.SlotText]; ok {
			t.Errorf("slot %s = %+v: a TEXT hinted wordcount must go to %s", route.SlotText, v, slotWordCount)
		}
	})

	t.Run("declared data type validated, merged and slotted", func(t *testing.T) {
		testDeclaredDataType(ctx, t, o, js, names, res, agent)
	})

	t.Run("direct tasks", func(t *testing.T) {
		d := client.NewDispatcher(js, names, "examples/node test")
		call := func(task schemas.TaskRequest) (client.Result, string) {
			t.Helper()
			id, err := d.Dispatch(ctx, agentName, task, client.DispatchMeta{})
			if err != nil {
				t.Fatal(err)
			}
			actx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			r, err := d.Await(actx, names.Result(agentName, id), id)
			if err != nil {
				t.Fatalf("task %s: %v\nagent output:\n%s", id, err, agent.Out.String())
			}
			return r, id
		}
		r, id := call(schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("one two three", "test")}})
		if !r.Result.Success || r.Event.Type != bus.TypeTaskCompleted || r.Event.Ext(bus.ExtTaskID) != id {
			t.Fatalf("result %+v (type %s, taskid %q)", r.Result, r.Event.Type, r.Event.Ext(bus.ExtTaskID))
		}
		var counts schemas.AnalysisResult
		if err := r.Result.Outputs["counts"].Decode(&counts); err != nil || len(counts.Items) != 1 || counts.Items[0].Features["words"] != 3 {
			t.Errorf("counts %+v (%v), want one item of 3 words", counts, err)
		}
		raw, err := res.Results.GetLastMsgForSubject(ctx, names.Result(agentName, id))
		if err != nil {
			t.Fatal(err)
		}
		if got := raw.Header.Get(jetstream.MsgIDHeader); got != "result-"+id {
			t.Errorf("Nats-Msg-Id of the result = %q, want result-%s", got, id)
		}

		// A structured-mode task (what a plain `nats pub` sends) is read too.
		meta := client.DispatchMeta{}
		sev, err := d.Event(agentName, schemas.TaskRequest{Instruction: "four words right here"}, &meta)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := bus.EncodeStructured(must(names.Task(agentName)), sev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		actx, acancel := context.WithTimeout(ctx, 20*time.Second)
		sr, err := d.Await(actx, meta.ReplyTo, meta.TaskID)
		acancel()
		if err != nil || !sr.Result.Success || sr.Result.Summary != "counted 4 words in 1 text" {
			t.Errorf("structured task: %+v, %v", sr.Result, err)
		}

		for _, tc := range []struct {
			name string
			task schemas.TaskRequest
			code string
			says string
		}{
			{"value fails its type's schema", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{
				"text": {DataType: schemas.TypeText, Value: json.RawMessage(`42`)}}}, schemas.CodeInvalidInput, `input "text"`},
			{"undeclared input", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{
				"images": schemas.TextValue("x", "test")}}, schemas.CodeInvalidInput, `"images" is not declared`},
			{"params fail the contract", schemas.TaskRequest{Instruction: "count me", Params: map[string]any{"top": 0}},
				schemas.CodeInvalidParams, "top"},
			{"missing file", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{
				"documents": schemas.FilesValue(schemas.FromIDs(schemas.ContentDocuments, "f-doesnotexist"), "test")}},
				schemas.CodeNotFound, "f-doesnotexist"},
		} {
			r, _ := call(tc.task)
			if r.Result.Success || r.Event.Type != bus.TypeTaskFailed || r.Result.Error == nil {
				t.Errorf("%s: result %+v, want a failure", tc.name, r.Result)
				continue
			}
			if r.Result.Error.Code != tc.code || !strings.Contains(r.Result.Error.Message, tc.says) {
				t.Errorf("%s: error %s %q, want code %s naming %q", tc.name, r.Result.Error.Code, r.Result.Error.Message, tc.code, tc.says)
			}
			if err := schemas.ValidateJSON(schemas.SchemaResult, r.Event.Data); err != nil {
				t.Errorf("%s: the failed result fails result.schema.json: %v", tc.name, err)
			}
		}
	})

	// chatTurn sends message with the Node client and returns the
	// conversation's state once the turn completed by the Node agent.
	chatTurn := func(t *testing.T, message string) *schemas.ConversationState {
		cctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, nodeBin, "client.js", "--timeout", "40", message)
		cmd.Env = append(os.Environ(), "NATS_URL="+srv.URL())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("client.js: %v\n%s\nagent output:\n%s", err, out, agent.Out.String())
		}
		if !strings.Contains(string(out), "state: completed") || !strings.Contains(string(out), agentName) {
			t.Fatalf("client output does not show a completed turn by %s:\n%s", agentName, out)
		}
		m := regexp.MustCompile(`(?m)^conversation: (\S+)$`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("client output names no conversation:\n%s", out)
		}
		st, err := o.Store().Conversation(ctx, string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	instructionCounted := func(t *testing.T, st *schemas.ConversationState, words float64) {
		v, ok := st.Slots[route.SlotAnalysis]
		var counts schemas.AnalysisResult
		if !ok || v.Decode(&counts) != nil || len(counts.Items) != 1 || counts.Items[0].ID != "instruction" || counts.Items[0].Features["words"] != words {
			t.Errorf("conversation slot %s = %+v, want the %v words of the instruction counted", route.SlotAnalysis, v, words)
		}
		if _, ok := st.Slots[slotWordCount]; !ok {
			t.Errorf("conversation has no %s slot: %v", slotWordCount, st.Slots)
		}
	}
	t.Run("chat turn from the Node client", func(t *testing.T) {
		instructionCounted(t, chatTurn(t, "analyze the words of this short sentence"), 7)
	})
	// No LLM and no verb the offline planner knows: it finds the agent by
	// its name and description.
	t.Run("chat reaches the agent by its description", func(t *testing.T) {
		instructionCounted(t, chatTurn(t, "count the words of this sentence"), 6)
	})

	t.Run("SIGTERM departs", func(t *testing.T) {
		nc := srv.Conn(t)
		depart, _ := names.Depart(agentName)
		sub, err := nc.SubscribeSync(depart)
		if err != nil {
			t.Fatal(err)
		}
		changed := o.Registry().Changes()
		if err := agent.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-agent.Exited:
			if agent.Err != nil {
				t.Fatalf("agent exited with %v after SIGTERM\n%s", agent.Err, agent.Out.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("agent still running 20s after SIGTERM\n%s", agent.Out.String())
		}
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("no departure on %s: %v", depart, err)
		}
		ev, err := bus.Decode(msg)
		if err != nil || ev.Type != bus.TypeAgentDeparted {
			t.Fatalf("departure event: type %q, err %v", ev.Type, err)
		}
		var dep schemas.Departure
		if err := bus.DecodeData(ev, &dep, func(b []byte) error { return schemas.ValidateJSON(schemas.SchemaDeparture, b) }); err != nil || dep.Instance != instanceID {
			t.Errorf("departure %+v (%v), want instance %s", dep, err, instanceID)
		}
		for {
			if _, ok := o.Registry().Lookup(agentName); !ok {
				break
			}
			select {
			case <-changed:
				changed = o.Registry().Changes()
			case <-time.After(10 * time.Second):
				t.Fatalf("%s still in the registry after its departure", agentName)
			}
		}
		if _, err := res.Agents.Get(ctx, agentName+"."+instanceID); !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			t.Errorf("registry key after departure: %v, want it deleted", err)
		}
	})
}

func startOrchestrator(t *testing.T, srv *bustest.Server, res *bus.Resources) *orchestrator.Orchestrator {
	t.Helper()
	router := route.NewRouter(route.WithValueResolver(resolvers.NewCollections(res.Files, 0)))
	if err := router.RegisterSlot(schemas.TypeText, "wordcount", slotWordCount); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	o, err := orchestrator.New(srv.Conn(t), orchestrator.WithRouter(router), orchestrator.WithSweepInterval(200*time.Millisecond), orchestrator.WithChat(chat.WithLogger(quiet)))
	if err != nil {
		t.Fatal(err)
	}
	meshtest.RunOrchestrator(t, o)
	return o
}

// startProcess runs a node script of the example (see nodetest.Start).
func startProcess(t *testing.T, node, script, natsURL string, env ...string) *nodetest.Process {
	return nodetest.Start(t, node, script, natsURL, env...)
}

// npmInstall installs the locked dependencies unless node_modules already
// holds them.
func npmInstall(t *testing.T, npm string) { nodetest.Install(t, npm, ".") }

// buildAgentmesh builds the agentmesh binary from the module root.
func buildAgentmesh(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "agentmesh")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agentmesh")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/agentmesh: %v\n%s", err, out)
	}
	return bin
}

func store(ctx context.Context, t *testing.T, files *resolvers.ObjectStore, name, content string) string {
	t.Helper()
	ref, err := files.Store(ctx, strings.NewReader(content), "text/plain", map[string]string{resolvers.MetaFilename: name})
	if err != nil {
		t.Fatal(err)
	}
	return ref.ID
}

func waitRun(ctx context.Context, t *testing.T, o *orchestrator.Orchestrator, id string, agent *nodetest.Process) *state.RunState {
	t.Helper()
	var run *state.RunState
	var err error
	if !fixture.Within(30*time.Second, func() bool {
		run, err = o.Store().Run(ctx, id)
		return err == nil && run.Done()
	}) {
		t.Fatalf("run %s not done after 30s (%+v, %v)\nagent output:\n%s", id, run, err, agent.Out.String())
	}
	return run
}

func exitStderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// TestNodePrefixFromEnv: the Node example reads the subject prefix from
// AGENTMESH_PREFIX, as the Go side does, and falls back to MESH_PREFIX.
func TestNodePrefixFromEnv(t *testing.T) {
	nodeBin, errNode := exec.LookPath("node")
	npmBin, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipping the Node.js example: node and npm are not on PATH (install Node.js 20 or later to run it; CI does)")
	}
	npmInstall(t, npmBin)
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTMESH_PREFIX=") && !strings.HasPrefix(kv, "MESH_PREFIX=") {
			base = append(base, kv)
		}
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "mesh MESH_TASKS"},
		{[]string{"AGENTMESH_PREFIX=team1"}, "team1 TEAM1_TASKS"},
		{[]string{"MESH_PREFIX=old"}, "old OLD_TASKS"},
		{[]string{"AGENTMESH_PREFIX=team1", "MESH_PREFIX=old"}, "team1 TEAM1_TASKS"},
	} {
		cmd := exec.Command(nodeBin, "--input-type=module", "-e",
			`const m = await import("./mesh.js"); const n = m.names(); console.log(n.prefix, n.tasksStream);`)
		cmd.Env = append(append([]string(nil), base...), tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Errorf("env %v: %q (%v), want %q", tc.env, out, err, tc.want)
		}
	}
}
