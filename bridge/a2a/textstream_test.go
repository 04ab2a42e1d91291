package a2a_test

import (
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm"
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

// A PromptAgent's task streamed with SendStreamingMessage sends its
// model's text as chunks of its TEXT output's artifact, then the whole
// output as that artifact's last chunk.
func TestAgentStreamSendsAPromptAgentsText(t *testing.T) {
	chunks := []string{"Dusk", " on the", " sea."}
	ls := llmtest.New(t, llmtest.Reply{Content: strings.Join(chunks, ""), Chunks: chunks})
	lc, err := llm.New(ls.Config())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := prompt.Parse([]byte(`
name: Poet
description: Writes a line.
capability: GENERATION
system_prompt: Write one line.
inputs: [{name: text, data_type: TEXT, required: true}]
outputs: [{name: line, data_type: TEXT}]
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, func(*bus.Resources) agents.Agent {
		a, err := prompt.New(cfg, lc)
		if err != nil {
			t.Fatal(err)
		}
		return a
	})
	evs := stream(t, r.agentURL("Poet"), a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("the sea at dusk"))})
	var updates []*a2a.TaskArtifactUpdateEvent
	for _, ev := range evs {
		if ev.ArtifactUpdate != nil {
			updates = append(updates, ev.ArtifactUpdate)
		}
	}
	last := evs[len(evs)-1]
	if len(updates) != len(chunks)+1 || last.StatusUpdate == nil || last.StatusUpdate.Status.State != a2a.StateCompleted {
		t.Fatalf("%d artifact updates, last event %+v", len(updates), last)
	}
	for i, u := range updates {
		text := *u.Artifact.Parts[0].Text
		if u.Artifact.ArtifactID != "line" {
			t.Errorf("update %d of artifact %q", i, u.Artifact.ArtifactID)
		}
		if i < len(chunks) && (text != chunks[i] || u.Append != (i > 0) || u.LastChunk) {
			t.Errorf("chunk %d %+v: %q", i, u, text)
		}
		if i == len(chunks) && (text != "Dusk on the sea." || u.Append || !u.LastChunk) {
			t.Errorf("last update %+v: %q", u, text)
		}
	}
}
