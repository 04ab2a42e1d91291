package agents

import (
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// isShadow reports whether d is the shadow copy of a task (a rollout in
// shadow mode, docs/protocol.md "Versions and rollouts"): marked with
// bus.HeaderShadow, on this instance's version subject.
func (r *Runtime) isShadow(d *delivery) bool {
	return r.versionSubj != "" && d.raw.Subject == r.versionSubj && d.raw.Header.Get(bus.HeaderShadow) != ""
}

// shadowOf readies shadow copy d to run where it can reach no one: its
// result goes to mesh.result.<agent>.shadow.<taskid> (the results stream
// records it; no caller reads it), it names no conversation, run or step,
// reports no progress nor text (run gives it no task scope) and keeps no
// step journal (the original's journal is the original's). On a secure
// mesh the copy must still carry a signature of a sender of the mesh.
func (r *Runtime) shadowOf(d *delivery) error {
	d.shadow = true
	if creds := bus.CredentialsOf(r.nc); creds != nil {
		if _, err := r.sender(creds, d); err != nil {
			return err
		}
	}
	ev := &d.event
	for _, ext := range []string{bus.ExtConversationID, bus.ExtRunID, bus.ExtStepID} {
		ev.SetExt(ext, "")
	}
	ev.SetExt(bus.ExtReplyTo, r.cfg.names.ShadowResult(r.contract.Name, ev.ID))
	return nil
}

// endShadow ends a shadow copy that will not run with res, recorded on its
// shadow result subject when it has an id.
func (r *Runtime) endShadow(d *delivery, res schemas.AgentResult) {
	d.shadow = true
	r.log.WarnContext(d.ctx, "shadow copy not run", "subject", d.raw.Subject, "err", res.Error)
	if bus.ValidateToken("", d.event.ID) == nil {
		ev := d.event
		ev.SetExt(bus.ExtReplyTo, r.cfg.names.ShadowResult(r.contract.Name, ev.ID))
		r.stamp(d, &res)
		if err := r.publishResult(ev, res); err != nil {
			r.log.WarnContext(d.ctx, "recording a shadow copy's failure", "err", err)
		}
	}
	_ = d.msg.TermWithReason("shadow copy not run")
	r.finished(d, schemas.OutcomeFailed, res)
}

// sender returns who signed task d. A task that a rollout's subject
// mapping moved from mesh.task.<agent> to a version's subject was signed
// for the subject it was published on: when the delivered subject does not
// verify, the agent's own task subject is tried.
func (r *Runtime) sender(creds *bus.Credentials, d *delivery) (bus.Identity, error) {
	id, err := creds.Sender(d.raw)
	if err == nil || d.raw.Subject == r.taskSubj || !strings.HasPrefix(d.raw.Subject, r.taskSubj+".v.") {
		return id, err
	}
	moved := &nats.Msg{Subject: r.taskSubj, Header: d.raw.Header, Data: d.raw.Data}
	if id, err2 := creds.Sender(moved); err2 == nil {
		return id, nil
	}
	return id, err
}
