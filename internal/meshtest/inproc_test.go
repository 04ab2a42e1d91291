package meshtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
)

// An agent run in-process is registered once Run returns; its stop may be
// called twice and takes it out of the registry; an orchestrator run
// in-process is ready once Orchestrator returns.
func TestAgentAndOrchestrator(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	o, err := orchestrator.New(srv.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	meshtest.RunOrchestrator(t, o)
	stop := meshtest.Serve(t, srv.Conn(t), text.New(), agents.WithHeartbeat(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.Registry().Wait(ctx, text.Name, 1); err != nil {
		t.Fatal(err)
	}
	stop()
	stop()
	fixture.Eventually(t, text.Name+" out of the registry after stop", func() bool {
		info, ok := o.Registry().Lookup(text.Name)
		return !ok || len(info.Instances) == 0
	})
}
