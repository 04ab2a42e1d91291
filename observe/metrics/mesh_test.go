package metrics_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/observe/metrics"
	"github.com/agentmesh/agentmesh/observe/metrics/metricstest"
	"github.com/agentmesh/agentmesh/schemas"
)

// echoMesh is an embedded server with one instance of the agent Echo, and
// a registry holding a MeshCollector over it, served on an endpoint.
type echoMesh struct {
	srv       *bustest.Server
	js        jetstream.JetStream
	reg       *prometheus.Registry
	url       string // http://ADDR/metrics
	stopAgent func()
}

func newEchoMesh(t *testing.T, ctx context.Context) *echoMesh {
	t.Helper()
	mm := meshtest.New(t)
	srv, res := mm.Srv, mm.Res
	echo := agents.Func(schemas.AgentContract{Name: "Echo", Capability: schemas.CapAnalysis, Description: "answers"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true}, nil
		})
	stopAgent := mm.Run(t, echo, agents.WithHeartbeat(400*time.Millisecond))
	reg, err := meshcore.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	if err := reg.Wait(ctx, "Echo", 1); err != nil {
		t.Fatal(err)
	}
	m := &echoMesh{srv: srv, js: srv.JetStream(t), reg: prometheus.NewRegistry(),
		stopAgent: stopAgent}
	m.reg.MustRegister(metrics.NewMeshCollector(reg, m.js, srv.Names()))
	e, err := metrics.Serve("127.0.0.1:0", m.reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	m.url = e.URL() + "/metrics"
	return m
}

// The mesh collector reads, at each scrape, the live instances of each
// agent in the registry and the backlog of each agent's durable consumer:
// with the one instance stopped, published tasks wait in its consumer.
func TestMeshCollector(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := newEchoMesh(t, ctx)
	// A consumer of the tasks stream that is not an agent's (its durable
	// name is not the agent its filter names) is left out.
	other, _ := m.srv.Names().Task("Other")
	if _, err := m.js.CreateOrUpdateConsumer(ctx, m.srv.Names().TasksStream(), jetstream.ConsumerConfig{Durable: "watcher",
		FilterSubject: other, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	fams := metricstest.Scrape(t, m.url)
	if live := fams.Value("agentmesh_agents_live", "agent", "Echo"); live != 1 {
		t.Errorf("agents live = %v, want 1\n%s", live, fams.Series("agentmesh_agents_live"))
	}
	if pending := fams.Value("agentmesh_consumer_pending", "agent", "Echo"); pending != 0 {
		t.Errorf("pending with an instance serving = %v, want 0", pending)
	}

	m.stopAgent()
	subj, _ := m.srv.Names().Task("Echo")
	for range 3 {
		ev, err := bus.NewEvent(bus.TypeTaskRequested, "/test", schemas.TaskRequest{Instruction: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := bus.Encode(subj, ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	if !fixture.Within(fixture.WaitTimeout, func() bool {
		fams = metricstest.Scrape(t, m.url)
		return fams.Value("agentmesh_agents_live", "agent", "Echo") == 0 && fams.Value("agentmesh_consumer_pending", "agent", "Echo") == 3
	}) {
		t.Fatalf("after the instance left and 3 tasks were published:\n%s\n%s", fams.Series("agentmesh_agents_live"), fams.Series("agentmesh_consumer_pending"))
	}
	if got := fams.Series("agentmesh_consumer_pending"); got != `agentmesh_consumer_pending{agent="Echo"} 3` {
		t.Errorf("consumer pending series:\n%s\nwant Echo's alone", got)
	}
}

// Names lists exactly the families the observer and the mesh collector
// export once each kind of observation was made.
func TestNames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := newEchoMesh(t, ctx)
	o, err := metrics.New(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ob := range []schemas.Observation{
		schemas.TaskReceived{TaskRef: schemas.TaskRef{Agent: "Echo"}, Delivery: 2},
		schemas.TaskFinished{TaskRef: schemas.TaskRef{Agent: "Echo"}, Outcome: schemas.OutcomeDeadLetter, Metrics: schemas.Metrics{Tokens: schemas.Tokens{Prompt: 1}, Cost: 1}},
		schemas.StepChanged{Agent: "Echo", Status: schemas.StepCompleted},
		schemas.RunChanged{Status: schemas.RunCompleted},
		schemas.LLMCalled{Model: "m", Tokens: schemas.Tokens{Prompt: 1}},
		schemas.ChatTurnEnded{State: schemas.ChatCompleted},
	} {
		o.Observe(ctx, ob)
	}
	var got []string
	for name := range metricstest.Scrape(t, m.url) {
		if strings.HasPrefix(name, metrics.Namespace+"_") {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, metrics.Names()) {
		t.Errorf("exported families:\n%s\nNames():\n%s", strings.Join(got, "\n"), strings.Join(metrics.Names(), "\n"))
	}
}
