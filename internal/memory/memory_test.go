package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/memory"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestRememberAndRecall: the same fact twice is one key; recall ranks by
// the message, leaves out facts that share no term with it, keeps to k and
// the character budget; an identity's MaxFacts+1st fact is refused (its
// MaxFacts-th again is not: it replaces itself). The bucket is made on
// first use, on a mesh provisioned without it.
func TestRememberAndRecall(t *testing.T) {
	srv := bustest.Start(t)
	ctx := context.Background()
	s := memory.New(srv.JetStream(t), srv.Names())
	for _, text := range []string{"Erin drinks green tea", "erin drinks green tea ", "Erin's cat is called Miso", "Erin lives near the harbour"} {
		if _, err := s.Remember(ctx, memory.Fact{Identity: "erin", Text: text, Source: "remember"}); err != nil {
			t.Fatal(err)
		}
	}
	if facts, err := s.List(ctx, "erin"); err != nil || len(facts) != 3 {
		t.Fatalf("facts = %+v, %v; want 3 (the repeated one once)", facts, err)
	}
	got, err := s.Recall(ctx, "erin", "what tea should I order for my cat", 5, 1000)
	if err != nil || len(got) != 2 || !strings.Contains(got[0].Text, "tea") && !strings.Contains(got[0].Text, "cat") {
		t.Fatalf("recall = %+v, %v; want the tea and the cat facts, not the harbour", got, err)
	}
	if got, _ := s.Recall(ctx, "erin", "what tea should I order for my cat", 1, 1000); len(got) != 1 {
		t.Errorf("recall with k=1 = %+v", got)
	}
	if got, _ := s.Recall(ctx, "erin", "what tea should I order for my cat", 5, 10); len(got) != 0 {
		t.Errorf("recall within 10 characters = %+v", got)
	}
	if got, _ := s.Recall(ctx, "nobody", "tea", 5, 1000); len(got) != 0 {
		t.Errorf("another identity recalls %+v", got)
	}

	for i := range memory.MaxFacts {
		if _, err := s.Remember(ctx, memory.Fact{Identity: "full", Text: fmt.Sprintf("fact number %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Remember(ctx, memory.Fact{Identity: "full", Text: "one more"}); !errors.Is(err, memory.ErrFull) || !strings.Contains(err.Error(), "agentmesh memory rm") {
		t.Errorf("fact %d: %v, want ErrFull saying what to do", memory.MaxFacts+1, err)
	}
	if _, err := s.Remember(ctx, memory.Fact{Identity: "full", Text: "fact number 0"}); err != nil {
		t.Errorf("a fact kept already, remembered again: %v", err)
	}
	for _, bad := range []memory.Fact{{Identity: "a.b", Text: "x"}, {Identity: "erin", Text: "  "}, {Identity: "erin", Text: "\xff"}} {
		if _, err := s.Remember(ctx, bad); !errors.Is(err, memory.ErrInvalidFact) {
			t.Errorf("Remember(%+v) = %v, want ErrInvalidFact", bad, err)
		}
	}
}

// embedder embeds with the scripted model's deterministic vectors
// (llmtest.Embedding) and counts the texts it embedded.
type embedder struct{ texts int }

func (e *embedder) Embed(_ context.Context, texts []string) ([][]float32, schemas.Usage, error) {
	e.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = llmtest.Embedding(t)
	}
	return out, schemas.Usage{}, nil
}

// TestRecallDense: a fact that shares no term with the message but is
// close to it in the embedding space ("vegetarian" and "vegetable" meet in
// the scripted model) is recalled with an embedding model and not
// without; unrelated facts stay out either way. A fact remembered without
// a model is embedded when first recalled, and its vector stored back.
func TestRecallDense(t *testing.T) {
	srv := bustest.Start(t)
	ctx := context.Background()
	plain := memory.New(srv.JetStream(t), srv.Names())
	e := &embedder{}
	dense := memory.New(srv.JetStream(t), srv.Names(), memory.WithEmbedder(e, "scripted"))
	const msg = "suggest a vegetable soup for dinner"
	if _, err := plain.Remember(ctx, memory.Fact{Identity: "erin", Text: "Erin is vegetarian"}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Erin's cat is called Miso", "Erin lives near the harbour"} {
		if _, err := dense.Remember(ctx, memory.Fact{Identity: "erin", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if e.texts != 2 {
		t.Fatalf("embedded %d texts remembering 2 facts with the model", e.texts)
	}
	if got, err := plain.Recall(ctx, "erin", msg, 5, 1000); err != nil || len(got) != 0 {
		t.Fatalf("lexical recall = %+v, %v; want nothing (no fact shares a term)", got, err)
	}
	got, err := dense.Recall(ctx, "erin", msg, 5, 1000)
	if err != nil || len(got) != 1 || got[0].Text != "Erin is vegetarian" {
		t.Fatalf("fused recall = %+v, %v; want the vegetarian fact only", got, err)
	}
	if e.texts != 4 { // the message and the fact stored without a vector
		t.Fatalf("embedded %d texts after the first recall, want 4", e.texts)
	}
	if got, err := dense.Recall(ctx, "erin", msg, 5, 1000); err != nil || len(got) != 1 || e.texts != 5 {
		t.Fatalf("second recall = %+v, %v, %d texts embedded; want the fact again, only the message embedded (the vector was stored back)", got, err, e.texts)
	}
	if facts, _ := dense.List(ctx, "erin"); len(facts) != 3 {
		t.Fatalf("facts = %+v", facts)
	}
	// A term shared still recalls lexically, and fusion keeps it first.
	if got, _ := dense.Recall(ctx, "erin", "is Miso the cat hungry", 5, 1000); len(got) == 0 || got[0].Text != "Erin's cat is called Miso" {
		t.Fatalf("fused recall of a shared term = %+v", got)
	}
}
