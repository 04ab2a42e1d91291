package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// ErrForeignReplyTo is a signed task whose replyto lies in the result
// subjects of another identity than the one that signed it.
var ErrForeignReplyTo = errors.New("replyto outside the sender's result subjects")

// ErrForeignOwner is a client's signed task whose owner extension names
// another client: its progress would go where that client reads.
var ErrForeignOwner = errors.New("owner is not the sending client")

// senderSpace returns the result subjects an identity may name as the
// replyto of a task for this agent: mesh.result.<agent>.client.<client>.
// for a client, mesh.result.<agent>.agent.<caller>. for an agent, and ""
// (any of this agent's result subjects) for the orchestrator and admin.
func (r *Runtime) senderSpace(id bus.Identity) string {
	switch id.Role {
	case bus.RoleClient:
		return r.cfg.names.ClientResult(r.contract.Name, id.Name, "")
	case bus.RoleAgent:
		return r.cfg.names.CallResult(r.contract.Name, id.Name, "")
	}
	return ""
}

// checkSender makes sure, on a secure mesh (the runtime's connection was
// made with an agentmesh identity's credentials), that a task answers
// only into the result subjects of the identity that sent it: the task
// must be signed (bus.Credentials.Sender) and its replyto (or, with none,
// mesh.result.<agent>.<taskid>) lie in the signer's space (senderSpace); a
// client's task is owned by that client (ExtOwner: set when absent,
// refused when it names another).
// A refused task from a known sender is answered, with code forbidden, on
// its own space (refuseOn); one whose sender is unknown has no subject
// anyone may be answered on ("").
func (r *Runtime) checkSender(d *delivery) (refuseOn string, err error) {
	creds := bus.CredentialsOf(r.nc)
	if creds == nil || d.shadow { // a shadow copy's signature was checked by shadowOf; it answers no one
		return "", nil
	}
	id, err := r.sender(creds, d)
	if err != nil {
		return "", err
	}
	if err := ownTask(d, id); err != nil {
		return r.senderSpace(id) + d.event.ID, err
	}
	space := r.senderSpace(id)
	replyTo := d.event.Ext(bus.ExtReplyTo)
	if space == "" || strings.HasPrefix(replyTo, space) && len(replyTo) > len(space) {
		return "", nil
	}
	if replyTo == "" {
		replyTo = r.cfg.names.Result(r.contract.Name, d.event.ID)
	}
	return space + d.event.ID, fmt.Errorf("%w: task %s from %s names replyto %q: %s may only name a subject under %s> (the default %s is not its)",
		ErrForeignReplyTo, d.event.ID, id.User(), replyTo, id.User(), space, r.cfg.names.Result(r.contract.Name, "<taskid>"))
}

// ownTask makes a client's task its own: its progress and text go on the
// client's subjects, which it alone reads, and its files to and from the
// client's bucket, never another's. The owner is set when absent; one
// naming another client is refused.
func ownTask(d *delivery, id bus.Identity) error {
	if id.Role != bus.RoleClient {
		return nil
	}
	switch owner := d.event.Ext(bus.ExtOwner); owner {
	case "":
		d.event.SetExt(bus.ExtOwner, id.Name)
	case id.Name:
	default:
		return fmt.Errorf("%w: task %s from %s names owner %q: a client may only name itself (%q) or leave the owner out",
			ErrForeignOwner, d.event.ID, id.User(), owner, id.Name)
	}
	return nil
}

// directOwner settles, on a secure mesh, whose a direct call is, as
// checkSender does for a queued task (a direct call needs no more: its
// answer goes back on the caller's own reply subject). A client's call is
// its own (ownTask). A call no identity of this mesh signed (sent
// unsigned, or by a tenant's identity through an import of the endpoint)
// is owned by no one: whatever owner it names is dropped, so it reads and
// writes only the shared file store, and its progress goes where no
// client reads.
func (r *Runtime) directOwner(d *delivery) error {
	creds := bus.CredentialsOf(r.nc)
	if creds == nil {
		return nil
	}
	id, err := r.sender(creds, d)
	if err != nil {
		d.event.SetExt(bus.ExtOwner, "")
		return nil
	}
	return ownTask(d, id)
}

// refuseSender ends a task checkSender refused: answered with a failed
// result of code forbidden on refuseOn, or, with no subject to answer on,
// dead-lettered. Either way it is terminated and nothing runs.
func (r *Runtime) refuseSender(d *delivery, refuseOn string, cause error) {
	reason := oneLine(cause)
	r.log.WarnContext(d.ctx, "task refused: its sender may not be answered where it asks", "subject", d.raw.Subject, "err", reason)
	res := schemas.Failure(r.contract.Name, schemas.CodeForbidden, reason, false)
	res.Agent, res.Capability = r.contract.Name, r.contract.Capability
	res.Metrics.Attempt = d.attempt
	if refuseOn != "" {
		msg, _, err := r.resultMessage(refuseOn, d.event, res)
		if err == nil {
			// Its own message id: the refusal must not take the place of
			// the result of another requester's task of the same id.
			msg.Header.Set(jetstream.MsgIDHeader, "refused-"+d.event.ID+"@"+strings.TrimPrefix(refuseOn, r.resultPrefix))
			ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
			_, err = bus.Publish(ctx, r.js, msg)
			cancel()
		}
		if err == nil {
			_ = d.msg.TermWithReason(schemas.CodeForbidden)
			r.finished(d, schemas.OutcomeFailed, res)
			return
		}
		r.log.ErrorContext(d.ctx, "answering a refused task", "err", err)
	}
	if err := r.refuseUnanswered(d, schemas.CodeForbidden, schemas.CodeForbidden+": "+reason); err != nil {
		r.log.ErrorContext(d.ctx, "dead-lettering a refused task", "err", err)
		_ = d.msg.NakWithDelay(r.cfg.backoff[0])
		r.finished(d, schemas.OutcomeRetry, schemas.Failure(r.contract.Name, schemas.CodeForbidden, reason, true))
		return
	}
	_ = d.msg.TermWithReason(schemas.CodeForbidden)
	r.finished(d, schemas.OutcomeDeadLetter, res)
}

// doneKey is what a finished task is remembered by (the done set): its id
// and its replyto. Task ids are chosen by their senders, and another
// requester's task may carry the same id; it is not answered already.
func doneKey(ev bus.Event) string { return ev.ID + " " + ev.Ext(bus.ExtReplyTo) }

// resultMsgID is the Nats-Msg-Id of the result of task taskID on subject:
// result-<taskid>, or, on a client's or an agent's result subjects,
// result-<taskid>@<client|agent>.<name>.<rest>, so that the result of one
// requester's task never takes the place of another's with the same id
// (nor a shadow copy's result, on mesh.result.<agent>.shadow.<taskid>, the
// original's).
func (r *Runtime) resultMsgID(taskID, subject string) string {
	rest := strings.TrimPrefix(subject, r.resultPrefix)
	if strings.HasPrefix(rest, "client.") || strings.HasPrefix(rest, "agent.") || strings.HasPrefix(rest, "shadow.") {
		return "result-" + taskID + "@" + rest
	}
	return "result-" + taskID
}

// senderReply returns where a malformed task may be answered on a secure
// mesh: replyTo when it lies in the signer's space (or the signer is the
// orchestrator or admin), else the signer's own space with the task's id;
// known is false when the sender cannot be told, and the task is only
// dead-lettered. On a plain mesh it returns replyTo.
func (r *Runtime) senderReply(d *delivery, replyTo string) (to string, known bool) {
	creds := bus.CredentialsOf(r.nc)
	if creds == nil {
		return replyTo, true
	}
	id, err := r.sender(creds, d)
	if err != nil {
		return "", false
	}
	space := r.senderSpace(id)
	switch {
	case space == "" || strings.HasPrefix(replyTo, space):
		return replyTo, true
	case d.event.ID != "" && bus.ValidateToken("task id", d.event.ID) == nil:
		return space + d.event.ID, true
	}
	return "", false
}
