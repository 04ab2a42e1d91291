package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/schemas"
)

// announceRefusal tells the agent behind an announcement the registry left
// out why: an io.agentmesh.agent.refused event on
// mesh.events.<agent>.registry, a subject the agent can follow before it
// announces. Every replica sees the same refusal; the message id (key and
// revision) stores it once. An agent name that cannot be a subject token
// sends the refusal to mesh.dead.orchestrator instead.
func (o *Orchestrator) announceRefusal(ref meshcore.Refusal) {
	o.log.Warn("announcement refused", "key", ref.Key, "revision", ref.Revision, "err", ref.Err)
	ev, err := bus.NewEvent(bus.TypeAgentRefused, o.cfg.source, schemas.AgentRefusal{
		Agent: ref.Agent, Key: ref.Key, Revision: ref.Revision, Code: schemas.CodeInvalidContract, Error: ref.Err.Error()})
	if err != nil {
		o.log.Error("encoding a refusal", "key", ref.Key, "err", err)
		return
	}
	subject := o.names.Events(ref.Agent, "registry")
	if bus.ValidateAgentName(ref.Agent) != nil {
		subject, _ = o.names.Dead(DurableName)
	}
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		o.log.Error("encoding a refusal", "key", ref.Key, "err", err)
		return
	}
	msg.Header.Set(nats.MsgIdHdr, fmt.Sprintf("refused-%s-%d", ref.Key, ref.Revision))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := bus.Publish(ctx, o.js, msg); err != nil {
		o.log.Warn("publishing a refusal", "key", ref.Key, "err", err)
	}
}
