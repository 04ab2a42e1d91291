package text

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

func TestTransform(t *testing.T) {
	for _, tc := range []struct{ op, in, want string }{
		{"upper", "Hello wörld", "HELLO WÖRLD"},
		{"lower", "Hello WÖRLD", "hello wörld"},
		{"reverse", "abc→d", "d→cba"},
		{"title", "the QUICK  brown\tfox", "The Quick  Brown\tFox"},
		{"wordcount", " one two\nthree ", "3"},
		{"upper", "", ""},
	} {
		if got, _ := Transform(tc.op, tc.in); got != tc.want {
			t.Errorf("Transform(%q, %q) = %q; want %q", tc.op, tc.in, got, tc.want)
		}
	}
}

// Summaries count in good English: one word, two words.
func TestTransformSummaryPlurals(t *testing.T) {
	for _, tc := range []struct{ op, in, want string }{
		{"wordcount", "one", "counted 1 word"},
		{"wordcount", "one two", "counted 2 words"},
		{"upper", "a", "upper of 1 character"},
		{"upper", "", "upper of 0 characters"},
	} {
		if _, got := Transform(tc.op, tc.in); got != tc.want {
			t.Errorf("Transform(%q, %q) summary %q; want %q", tc.op, tc.in, got, tc.want)
		}
	}
}

func TestContractIsValid(t *testing.T) {
	c := New().Contract()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateParams(map[string]any{"op": "shout"}); err == nil {
		t.Error("op shout passed the params schema")
	}
	if err := c.ValidateParams(map[string]any{"op": "title", "delay_ms": 5}); err != nil {
		t.Errorf("valid params rejected: %v", err)
	}
}

func TestExecuteHonoursCancellation(t *testing.T) {
	ec := schemas.ContextFromTask(nil, schemas.TaskRequest{
		Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "test")},
		Params: map[string]any{"delay_ms": 60000},
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	time.AfterFunc(10*time.Millisecond, func() { cancel(stop) })
	if _, err := New().Execute(ctx, ec); !errors.Is(err, stop) {
		t.Fatalf("Execute after cancel = %v; want the cancel cause", err)
	}
	ec.SetParams(map[string]any{"op": "wordcount"})
	res, err := New().Execute(context.Background(), ec)
	if err != nil || !res.Success {
		t.Fatalf("Execute = %+v, %v", res, err)
	}
	if got, _ := res.Outputs["text"].Text(); got != "1" {
		t.Fatalf("wordcount output = %q; want 1", got)
	}
}
