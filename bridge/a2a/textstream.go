package a2a

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/schemas"
)

// answerStream turns the pieces of text a chat turn's model writes
// (schemas.ChatDelta) into TaskArtifactUpdateEvents of the turn's answer
// artifact, as the A2A spec streams an artifact in chunks: the first
// piece of a model call starts the artifact again (append false), the next
// ones append to it, none is the last chunk. The turn's end replaces the
// artifact with the whole answer (finishTurn, append false, lastChunk
// true), so a piece lost on the way, or text of a step that went on to
// call agents, does not stay in it. Pieces of agents' tasks in the
// conversation (TaskID set) are not the answer and are left out.
type answerStream struct {
	e    *taskEntry
	id   string // the answer artifact's id
	step int    // the model call of the pieces sent so far; 0: none yet
}

func (s *answerStream) add(d schemas.ChatDelta) {
	if d.TaskID != "" || d.Text == "" {
		return
	}
	if s.e.state() == StateSubmitted {
		// A task writing its answer is working, whichever of the turn's
		// progress (stored events) and its text (core NATS) comes first.
		s.e.setStatus(StateWorking, nil)
	}
	appendTo := d.Step == s.step
	s.step = d.Step
	s.e.addArtifactChunk(Artifact{ArtifactID: s.id, Name: "answer", Parts: []Part{TextPart(d.Text)}}, appendTo)
}

// addArtifactChunk records a chunk of an artifact being written: appended
// to the artifact of the same id, or starting it again. The task keeps the
// artifact's text whole, in one text part.
func (e *taskEntry) addArtifactChunk(a Artifact, appendTo bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.task.Status.State.Terminal() {
		return
	}
	stored := a
	i := slices.IndexFunc(e.task.Artifacts, func(x Artifact) bool { return x.ArtifactID == a.ArtifactID })
	switch {
	case i < 0:
		e.task.Artifacts = append(e.task.Artifacts, stored)
	case appendTo && len(e.task.Artifacts[i].Parts) == 1 && e.task.Artifacts[i].Parts[0].Text != nil:
		stored.Parts = []Part{TextPart(*e.task.Artifacts[i].Parts[0].Text + *a.Parts[0].Text)}
		e.task.Artifacts[i] = stored
	default:
		e.task.Artifacts[i] = stored
	}
	e.events = append(e.events, StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: e.task.ID, ContextID: e.task.ContextID, Artifact: a, Append: appendTo}})
	e.notifyLocked()
}

// maxPendingText bounds the pieces of an agent's text waiting to be
// recorded; more are lost, as the pieces travel at most once anyway.
const maxPendingText = 256

// followText subscribes to the text the task id's model writes
// (mesh.delta.<id>, agents.ReportText) through a channel, so the pieces
// read before the task's result are in it when the result comes.
func followText(h *Handler, id string) (<-chan *nats.Msg, func(), error) {
	ch := make(chan *nats.Msg, maxPendingText)
	sub, err := h.nc.ChanSubscribe(h.names.Deltas(id), ch)
	if err != nil {
		return nil, nil, fmt.Errorf("following the text of task %s: %w", id, err)
	}
	return ch, func() { _ = sub.Unsubscribe() }, nil
}

// textArtifact is the artifact an agent's streamed text goes to: its
// only output when that is TEXT (a PromptAgent's reply), whose artifact
// the result then replaces whole; "" when it has other outputs, whose
// text goes out as working status messages instead.
func textArtifact(c schemas.AgentContract) string {
	if len(c.Outputs) == 1 && c.Outputs[0].DataType == schemas.TypeText {
		return c.Outputs[0].Name
	}
	return ""
}

// taskText records the pieces of an agent task's text.
type taskText struct {
	e        *taskEntry
	artifact string
}

func (t *taskText) add(m *nats.Msg) {
	var d schemas.ChatDelta
	if json.Unmarshal(m.Data, &d) != nil || d.Text == "" {
		return
	}
	if t.artifact == "" {
		t.e.setStatus(StateWorking, agentMessage(t.e.task.ID, t.e.task.ContextID, d.Text))
		return
	}
	t.e.addArtifactChunk(Artifact{ArtifactID: t.artifact, Name: t.artifact, Parts: []Part{TextPart(d.Text)}}, d.Seq > 1)
}

// drain records the pieces already read.
func (t *taskText) drain(ch <-chan *nats.Msg) {
	for {
		select {
		case m := <-ch:
			t.add(m)
		default:
			return
		}
	}
}
