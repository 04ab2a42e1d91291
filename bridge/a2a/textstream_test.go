package a2a_test

import (
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/llm/llmtest"
)

// A chat turn streamed with SendStreamingMessage sends its model's text as
// it is written: artifact chunks of the answer (the first of a model call
// starting it, the next appending), before the turn completes; the last
// chunk replaces it with the whole answer.
func TestChatStreamSendsTheAnswerInChunks(t *testing.T) {
	r := newRig(t)
	chunks := []string{"All done:", " nothing", " to do."}
	r.withChat(t, nil, llmtest.Reply{Content: strings.Join(chunks, ""), Chunks: chunks})
	evs := stream(t, r.http.URL+a2a.PathChat, a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("say hello"))})
	var updates []*a2a.TaskArtifactUpdateEvent
	completedAt := -1
	for i, ev := range evs {
		if ev.ArtifactUpdate != nil {
			updates = append(updates, ev.ArtifactUpdate)
		}
		if ev.StatusUpdate != nil && ev.StatusUpdate.Status.State == a2a.StateCompleted {
			completedAt = i
		}
	}
	if len(updates) != len(chunks)+1 || completedAt != len(evs)-1 {
		t.Fatalf("%d artifact updates, completed at %d of %d events: %+v", len(updates), completedAt, len(evs), evs)
	}
	id := updates[0].Artifact.ArtifactID
	for i, u := range updates {
		text := *u.Artifact.Parts[0].Text
		last := i == len(updates)-1
		switch {
		case u.Artifact.ArtifactID != id || u.Artifact.Name != "answer":
			t.Errorf("update %d is of artifact %s %q, want %s", i, u.Artifact.ArtifactID, u.Artifact.Name, id)
		case last && (text != "All done: nothing to do." || u.Append || !u.LastChunk):
			t.Errorf("last update %+v: %q", u, text)
		case !last && (text != chunks[i] || u.Append != (i > 0) || u.LastChunk):
			t.Errorf("chunk %d %+v: %q", i, u, text)
		}
	}
}
