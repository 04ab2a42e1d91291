package bus

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// Headers a dead letter carries next to the original message's own.
const (
	HeaderDeadReason     = "Agentmesh-Dead-Reason"
	HeaderDeadAgent      = "Agentmesh-Dead-Agent"
	HeaderDeadInstance   = "Agentmesh-Dead-Instance"
	HeaderDeadDeliveries = "Agentmesh-Dead-Deliveries"
)

// maxReason bounds the reason header.
const maxReason = 1000

// DeadLetter returns the dead letter of orig for subject (mesh.dead.<agent>):
// orig's headers, except the Nats- ones (JetStream directives of the
// original publish), and body, with the reason in HeaderDeadReason on one
// line.
func DeadLetter(subject string, orig *nats.Msg, reason string) *nats.Msg {
	m := nats.NewMsg(subject)
	for k, vs := range orig.Header {
		if strings.HasPrefix(k, "Nats-") {
			continue
		}
		m.Header[k] = vs
	}
	reason = strings.NewReplacer("\r", " ", "\n", "; ").Replace(reason)
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "") + "…"
	}
	m.Header.Set(HeaderDeadReason, reason)
	m.Data = orig.Data
	return m
}
