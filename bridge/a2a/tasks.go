package a2a

import (
	"context"
	"slices"
	"sync"
	"time"
)

// taskKind says what a task runs on the mesh.
type taskKind int

const (
	kindAgent taskKind = iota // a task of one agent
	kindChat                  // a chat turn
)

// taskEntry is one A2A task and the stream of its changes. The goroutine
// that runs the task is its only writer.
type taskEntry struct {
	kind  taskKind
	agent string // kindAgent: the agent running it

	mu      sync.Mutex
	task    Task
	events  []StreamResponse // every change after the task was created
	changed chan struct{}    // closed at the next change
	turn    chan string      // kindChat: the next message of an interrupted turn
	begun   Task             // the task as its latest message found it (markBegun)
	begunAt int              // the number of changes then
}

func newEntry(kind taskKind, agent string, t Task) *taskEntry {
	return &taskEntry{kind: kind, agent: agent, task: t, changed: make(chan struct{})}
}

// snapshot returns a copy of the task with at most historyLength messages
// of history (all when nil).
func (e *taskEntry) snapshot(historyLength *int) Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshotLocked(historyLength)
}

func (e *taskEntry) snapshotLocked(historyLength *int) Task {
	t := e.task
	t.Artifacts = slices.Clone(t.Artifacts)
	t.History = slices.Clone(t.History)
	if historyLength != nil && *historyLength >= 0 && len(t.History) > *historyLength {
		t.History = t.History[len(t.History)-*historyLength:]
	}
	return t
}

func (e *taskEntry) state() TaskState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.task.Status.State
}

// settled reports whether the task has ended or waits for the client.
func (e *taskEntry) settled() bool {
	s := e.state()
	return s.Terminal() || s.Interrupted()
}

func (e *taskEntry) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// setStatus moves the task to state with an optional agent message; the
// message of a settling state (the agent's answer) also joins the history,
// progress messages do not.
func (e *taskEntry) setStatus(state TaskState, msg *Message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.task.Status.State.Terminal() {
		return // a terminal state is final
	}
	st := TaskStatus{State: state, Message: msg, Timestamp: now()}
	e.task.Status = st
	if msg != nil && (state.Terminal() || state.Interrupted()) {
		e.task.History = append(e.task.History, *msg)
	}
	e.events = append(e.events, StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: e.task.ID, ContextID: e.task.ContextID, Status: st}})
	e.notifyLocked()
}

// addArtifact records one output; one of the id of an artifact streamed
// in chunks (addArtifactChunk) replaces it.
func (e *taskEntry) addArtifact(a Artifact) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.task.Status.State.Terminal() {
		return
	}
	if i := slices.IndexFunc(e.task.Artifacts, func(x Artifact) bool { return x.ArtifactID == a.ArtifactID }); i >= 0 {
		e.task.Artifacts[i] = a // the whole of an artifact streamed in chunks
	} else {
		e.task.Artifacts = append(e.task.Artifacts, a)
	}
	e.events = append(e.events, StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: e.task.ID, ContextID: e.task.ContextID, Artifact: a, LastChunk: true}})
	e.notifyLocked()
}

// addUserMessage records a client's message that continues the task.
func (e *taskEntry) addUserMessage(m Message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m.ContextID = e.task.ContextID
	e.task.History = append(e.task.History, m)
}

// next returns the changes from index from on, whether the task has
// settled after them, and a channel closed at the next change.
func (e *taskEntry) next(from int) ([]StreamResponse, bool, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.task.Status.State
	return slices.Clone(e.events[min(from, len(e.events)):]), s.Terminal() || s.Interrupted(), e.changed
}

// start returns the task as it is now and the number of changes so far,
// together: a stream sends the task, then the changes from there.
func (e *taskEntry) start() (Task, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshotLocked(nil), len(e.events)
}

// markBegun records the task as it is before the work a message starts
// can change it: a streamed message sends the task from there, whatever
// the work did in the meantime, so a fast agent's answer is never folded
// into the first event.
func (e *taskEntry) markBegun() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.begun, e.begunAt = e.snapshotLocked(nil), len(e.events)
}

// sinceBegun returns what markBegun recorded.
func (e *taskEntry) sinceBegun() (Task, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.begun, e.begunAt
}

// wait blocks until the task settles or ctx ends.
func (e *taskEntry) wait(ctx context.Context) {
	for {
		_, settled, ch := e.next(0)
		if settled {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// taskStore keeps the tasks of this bridge in memory, dropping the oldest
// settled ones beyond max.
type taskStore struct {
	mu    sync.Mutex
	max   int
	byID  map[string]*taskEntry
	order []string
}

func newTaskStore(max int) *taskStore {
	return &taskStore{max: max, byID: map[string]*taskEntry{}}
}

func (s *taskStore) add(e *taskEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[e.task.ID] = e
	s.order = append(s.order, e.task.ID)
	for i := 0; len(s.byID) > s.max && i < len(s.order); {
		id := s.order[i]
		if old := s.byID[id]; old != nil && old.settled() {
			delete(s.byID, id)
			s.order = slices.Delete(s.order, i, i+1)
			continue
		}
		i++
	}
}

func (s *taskStore) get(id string) (*taskEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	return e, ok
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// all returns every task kept, oldest first.
func (s *taskStore) all() []*taskEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*taskEntry, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.byID[id])
	}
	return out
}
