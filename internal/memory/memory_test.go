package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/memory"
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
