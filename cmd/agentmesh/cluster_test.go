package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// serverProc is one `agentmesh server` process, a node of a cluster.
type serverProc struct {
	*proctest.Proc
	url string
}

// serverListening is the line `agentmesh server` prints once it accepts
// clients; its group is the URL.
var serverListening = regexp.MustCompile(`^\S+ \S+ \S+ listening on (\S+)`)

// startClusterProcs starts n `agentmesh server` processes that form the
// cluster "mesh" on loopback and returns them once each accepts clients.
func startClusterProcs(t *testing.T, n int) []*serverProc {
	t.Helper()
	ports := bustest.FreePorts(t, 2*n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[n+i])
	}
	var procs []*serverProc
	for i := range n {
		cmd := exec.Command(agentBinary(t), "server", "--name", fmt.Sprintf("n%d", i+1), "--port", fmt.Sprint(ports[i]),
			"--store", filepath.Join(t.TempDir(), "store"), "--cluster-name", "mesh",
			"--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[n+i]), "--routes", strings.Join(routes, ","))
		p := &serverProc{Proc: proctest.Start(t, cmd, serverListening)}
		p.url = p.WaitReady(t)[1]
		procs = append(procs, p)
	}
	return procs
}

func clusterURLs(procs []*serverProc) string {
	urls := make([]string, len(procs))
	for i, p := range procs {
		urls[i] = p.url
	}
	return strings.Join(urls, ",")
}

// A three-node cluster of `agentmesh server` processes runs pipelines and
// chat turns while one node is shut down mid-run: every accepted request
// completes exactly once, and after every CLI command has run against the
// cluster, every stream and bucket still has three replicas.
func TestClusterOfServerProcesses(t *testing.T) {
	procs := startClusterProcs(t, 3)
	urls := clusterURLs(procs)
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bustest.WaitJetStream(t, ctx.Done(), js)

	// Provision once with three replicas, as an operator does.
	if _, errOut, code := runCLI(t, urls, "--js-replicas", "3", "agents"); code != 0 {
		t.Fatalf("provisioning with three replicas: exit %d: %s", code, errOut)
	}
	checkReplicas(t, ctx, js, "after provisioning")

	// The model calls TextAgent with a literal text, then answers.
	model := llmtest.New(t)
	model.Handle(func(r llmtest.Request) llmtest.Reply {
		if len(r.MessagesOf("tool")) == 0 {
			return llmtest.Calls(llmtest.Call("TextAgent", map[string]any{"text": "hello cluster", "op": "upper"}))
		}
		return llmtest.Answer("done")
	})
	orch := exec.Command(agentBinary(t), "--nats", urls, "orchestrator")
	orch.Env = append(os.Environ(), "OPENAI_BASE_URL="+model.URL(), "OPENAI_API_KEY=test")
	orchOut := startBackground(t, orch)
	agentLog := startAgentProc(t, urls).Stderr
	reg, err := client.NewRegistry(ctx, mustKV(t, ctx, js, "mesh_agents"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	if err := reg.Wait(ctx, "TextAgent", 1); err != nil {
		t.Fatal(err)
	}

	names := bus.MustNames("")
	var runs, convs []string
	spec := client.NewPipeline("cluster").
		Step("upper", "TextAgent").Param("op", "upper").Input("text", "text:hello cluster").
		Then("count", "TextAgent").Param("op", "wordcount").
		MustBuild()
	for i := range 6 {
		id, err := client.SubmitPipeline(ctx, js, names, spec, fmt.Sprintf("cluster-run-%d", i), "cluster test")
		if err != nil {
			info, ierr := js.Stream(context.Background(), "MESH_REQUESTS")
			var cl any
			if ierr == nil {
				i2, _ := info.Info(context.Background())
				cl = i2.Cluster
			}
			t.Fatalf("run %d: %v; connected to %s; MESH_REQUESTS cluster %+v (%v)", i, err, nc.ConnectedUrl(), cl, ierr)
		}
		runs = append(runs, id)
		if i == 2 {
			// One node goes away while runs are under way.
			_ = procs[2].Cmd.Process.Signal(syscall.SIGTERM)
		}
		if i%2 == 0 {
			conv, _, err := client.SendChat(ctx, js, names, "", "make this loud", "cluster test")
			if err != nil {
				t.Fatal(err)
			}
			convs = append(convs, conv)
		}
	}
	<-procs[2].Exited()

	for _, run := range runs {
		ev := finalEvents(t, ctx, js, names.Events(run, "pipeline"), bus.TypePipelineCompleted, 1, orchOut, agentLog)
		var r schemas.RunEvent
		if err := ev[0].DataAs(&r); err != nil || r.Status != schemas.RunCompleted {
			t.Errorf("run %s ended %+v (%v)\norchestrator:\n%s", run, r, err, orchOut)
		}
	}
	for _, conv := range convs {
		ev := finalEvents(t, ctx, js, names.Events(conv, "chat"), bus.TypeChatResponded, 1, orchOut, agentLog)
		var r schemas.ChatResponse
		if err := ev[0].DataAs(&r); err != nil || r.State != schemas.ChatCompleted {
			t.Errorf("chat %s ended %+v (%v)\norchestrator:\n%s", conv, r, err, orchOut)
		}
	}

	// Every command, read-only or not, against the two nodes left.
	file := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(file, []byte("a note"), 0o600); err != nil {
		t.Fatal(err)
	}
	pipe := pipelineFile(t, "p.yaml", shoutPipeline)
	for _, args := range [][]string{
		{"agents"}, {"runs"}, {"conversations"}, {"state", "show", runs[0]}, {"state", "show", convs[0]},
		{"files", "put", file}, {"files", "ls"}, {"task", "TextAgent", "--param", "op=upper", "--text", "text=hi"},
		{"run", pipe}, {"chat", "--timeout", "30s", "again"}, // version does not connect: it takes no --nats
	} {
		if out, errOut, code := runCLI(t, urls, args...); code != 0 {
			t.Errorf("agentmesh %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	checkReplicas(t, ctx, js, "after every command")
}

func mustKV(t *testing.T, ctx context.Context, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// checkReplicas fails the test for any stream (buckets and the object
// store included) with fewer than three replicas.
func checkReplicas(t *testing.T, ctx context.Context, js jetstream.JetStream, when string) {
	t.Helper()
	all := bustest.Replicas(t, ctx, js)
	if len(all) < 8 {
		t.Fatalf("%s: %d streams, want the mesh's streams, buckets and object store", when, len(all))
	}
	for _, r := range all {
		if r.Replicas != 3 {
			t.Errorf("%s: %s has %d replicas, want 3", when, r.Name, r.Replicas)
		}
	}
}

// finalEvents waits for want events of type typ on subject, then reads on
// briefly to make sure there are no more.
func finalEvents(t *testing.T, ctx context.Context, js jetstream.JetStream, subject, typ string, want int, logs ...fmt.Stringer) []bus.Event {
	t.Helper()
	events, stop, err := client.Follow(ctx, js, bus.MustNames(""), subject, false)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var got []bus.Event
	settle := time.After(90 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == typ {
				got = append(got, ev)
				if len(got) == want {
					settle = time.After(500 * time.Millisecond)
				}
			}
		case <-settle:
			if len(got) != want {
				raw, _ := json.Marshal(got)
				t.Fatalf("%s: %d %s events, want exactly %d: %s\nlogs: %v", subject, len(got), typ, want, raw, logs)
			}
			return got
		}
	}
}
