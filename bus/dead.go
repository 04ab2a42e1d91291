package bus

import (
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/schemas"
)

// Headers a dead letter on mesh.dead.<agent> carries next to the original
// message's own.
const (
	HeaderDeadReason     = "Agentmesh-Dead-Reason"
	HeaderDeadAgent      = "Agentmesh-Dead-Agent"
	HeaderDeadInstance   = "Agentmesh-Dead-Instance"
	HeaderDeadDeliveries = "Agentmesh-Dead-Deliveries"
)

// maxDeadReason bounds the reason header, in characters.
const maxDeadReason = 1000

// DeadLetter returns a copy of msg addressed to subject (a Names.Dead
// subject): the same body and headers, minus the Nats- headers (JetStream
// directives of the original publish), plus the reason in
// Agentmesh-Dead-Reason with line breaks flattened and at most 1000
// characters,
// and the agent in Agentmesh-Dead-Agent when not empty.
func DeadLetter(subject string, msg *nats.Msg, agent, reason string) *nats.Msg {
	m := nats.NewMsg(subject)
	for k, vs := range msg.Header {
		if strings.HasPrefix(k, "Nats-") {
			continue
		}
		m.Header[k] = vs
	}
	reason = strings.NewReplacer("\r", " ", "\n", "; ").Replace(reason)
	m.Header.Set(HeaderDeadReason, schemas.Clip(reason, maxDeadReason))
	if agent != "" {
		m.Header.Set(HeaderDeadAgent, agent)
	}
	m.Data = msg.Data
	return m
}
