package bus

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// Headers a dead letter on mesh.dead.<agent> carries next to the original
// message's own.
const (
	HeaderDeadReason     = "Agentmesh-Dead-Reason"
	HeaderDeadAgent      = "Agentmesh-Dead-Agent"
	HeaderDeadInstance   = "Agentmesh-Dead-Instance"
	HeaderDeadDeliveries = "Agentmesh-Dead-Deliveries"
	// HeaderDeadCode is the error code (schemas.Code*) a refused message
	// was refused with: the answer to a request with no subject of its own
	// to answer on.
	HeaderDeadCode = "Agentmesh-Dead-Code"
	// HeaderDeadStream and HeaderDeadSequence name where the original
	// message was stored: the stream and sequence its publisher read in
	// its acknowledgement, by which it finds the dead letter of its own
	// message.
	HeaderDeadStream   = "Agentmesh-Dead-Stream"
	HeaderDeadSequence = "Agentmesh-Dead-Sequence"
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

// DeadLetterOf is DeadLetter for m, a message taken from a stream, refused
// with code (none when empty): the dead letter names the stream and
// sequence m was stored at (HeaderDeadStream, HeaderDeadSequence), and its
// Nats-Msg-Id is dead-<stream>-<sequence>, so handling m twice stores one
// dead letter. A sender whose request has no id usable as a subject token
// learns its refusal this way: it reads mesh.dead.<consumer> for the
// sequence its publish was acknowledged with.
func DeadLetterOf(subject string, m jetstream.Msg, agent, code, reason string) *nats.Msg {
	dead := DeadLetter(subject, &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}, agent, reason)
	if code != "" {
		dead.Header.Set(HeaderDeadCode, code)
	}
	if md, err := m.Metadata(); err == nil {
		dead.Header.Set(HeaderDeadStream, md.Stream)
		dead.Header.Set(HeaderDeadSequence, strconv.FormatUint(md.Sequence.Stream, 10))
		dead.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("dead-%s-%d", md.Stream, md.Sequence.Stream))
	}
	return dead
}

// RefusalNotice returns the refusal, on subject (a Names.DeadRefused
// subject), of dead, the dead letter (DeadLetterOf) of task taskID that a
// secure mesh refused and can answer on no result subject: its sender
// cannot be told (the task is unsigned, or its signature does not check),
// or it names no id to answer under. Every identity may read the notice,
// so it carries only what names the task and its refusal: the dead
// letter's Agentmesh-Dead-* headers (the code, the reason, the stream and
// sequence its publisher was acknowledged with) and, in ce-id, the task's
// id when it is a subject token; no data and no other header of the task.
// Its Nats-Msg-Id is refused-<stream>-<sequence>, so a task handled twice
// is refused once.
func RefusalNotice(subject string, dead *nats.Msg, taskID string) *nats.Msg {
	m := nats.NewMsg(subject)
	for _, k := range []string{HeaderDeadCode, HeaderDeadReason, HeaderDeadAgent, HeaderDeadStream, HeaderDeadSequence} {
		if v := dead.Header.Get(k); v != "" {
			m.Header.Set(k, v)
		}
	}
	if taskID != "" && ValidateToken("task id", taskID) == nil {
		m.Header.Set(headerPrefix+"id", taskID)
	}
	if st, seq := dead.Header.Get(HeaderDeadStream), dead.Header.Get(HeaderDeadSequence); st != "" && seq != "" {
		m.Header.Set(jetstream.MsgIDHeader, "refused-"+st+"-"+seq)
	}
	return m
}
