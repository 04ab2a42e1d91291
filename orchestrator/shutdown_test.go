package orchestrator_test

import (
	"context"
	"testing"

	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
)

// A replica told to stop while it is still setting its consumers up
// (Ctrl-C right after `agentmesh up`) has shut down, not failed: Run
// returns nil, as it does when told to stop later.
func TestRunStoppedWhileStartingIsAShutdown(t *testing.T) {
	m := meshtest.New(t)
	o, err := orchestrator.New(m.Srv.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := o.Run(ctx); err != nil {
		t.Fatalf("Run with an ended context: %v, want nil (a shutdown)", err)
	}
}
