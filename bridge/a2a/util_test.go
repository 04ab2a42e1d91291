package a2a_test

import (
	"errors"
	"testing"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/resolvers"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// newRigWithFiles is a rig with FileReader, an agent that reads its files
// from the object store.
func newRigWithFiles(t *testing.T) *rig {
	t.Helper()
	return newRig(t, func(res *bus.Resources) agents.Agent { return fileAgent(resolvers.NewObjectStore(res.Files)) })
}
