package main

import (
	"os"
	"os/exec"
	"testing"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/orchestrator"
)

// textMesh is TextAgent and an orchestrator run in the test's process.
type textMesh struct {
	agentOpts []agents.Option
	orchOpts  []orchestrator.Option
}

// start runs m on mesh until the test ends and returns the orchestrator
// once it is ready and TextAgent is in its registry.
func (m textMesh) start(t *testing.T, mesh *meshtest.Mesh) *orchestrator.Orchestrator {
	t.Helper()
	mesh.Run(t, text.New(), m.agentOpts...)
	return mesh.Orchestrator(t, []string{text.Name}, m.orchOpts...)
}

// startMetricsPair runs `agentmesh agent TextAgent` and `agentmesh
// orchestrator ORCHARGS` processes against url, each serving metrics, the
// orchestrator with env added to the test's; it returns the two metrics
// addresses and the orchestrator's stderr once both answer /readyz.
func startMetricsPair(t *testing.T, url string, env []string, orchArgs ...string) (agentAddr, orchAddr string, orchErr *proctest.Buffer) {
	t.Helper()
	agentAddr, orchAddr = freeAddr(t), freeAddr(t)
	agent := startAgentProc(t, url, "--metrics-addr", agentAddr)
	waitReady(t, agentAddr, agent.Stderr)
	orch := exec.Command(agentBinary(t), append([]string{"--nats", url, "orchestrator", "--metrics-addr", orchAddr}, orchArgs...)...)
	orch.Env = append(os.Environ(), env...)
	p := proctest.Start(t, orch, nil)
	waitReady(t, orchAddr, p.Stderr)
	return agentAddr, orchAddr, p.Stderr
}
