package schemas_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestCodeOf holds what the pipeline, the chat turn, the state store and
// the agent runtime each told their senders before one CodeOf served them
// all.
func TestCodeOf(t *testing.T) {
	limit := &schemas.LimitError{Limit: "steps", Value: 11, Max: 10}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain error", errors.New("kv down"), schemas.CodeInternal},
		{"agent result", fmt.Errorf("step x: %w", &schemas.ResultError{Code: schemas.CodeTimeout}), schemas.CodeTimeout},
		{"limit", fmt.Errorf("spec: %w", limit), schemas.CodeLimitExceeded},
		{"limit inside an invalid pipeline", fmt.Errorf("%w: %w", schemas.ErrInvalidPipeline, errors.Join(errors.New("step a: no agent"), limit)), schemas.CodeLimitExceeded},
		{"invalid pipeline", fmt.Errorf("%w: step a: no agent", schemas.ErrInvalidPipeline), schemas.CodeInvalidPipeline},
		{"bad name", fmt.Errorf("%w: run id %q", bus.ErrInvalidName, "a.b"), schemas.CodeInvalidID},
		{"bad data", fmt.Errorf("%w: not UTF-8", bus.ErrInvalidData), schemas.CodeMalformedEvent},
		{"bad attribute", bus.ErrInvalidAttribute, schemas.CodeMalformedEvent},
		{"too large", fmt.Errorf("run r: %w", state.ErrTooLarge), schemas.CodeTooLarge},
		{"corrupt", state.ErrCorrupt, schemas.CodeCorruptState},
		{"not found carries no code", state.ErrNotFound, schemas.CodeInternal},
		{"model down", fmt.Errorf("turn: %w", llm.ErrUnavailable), schemas.CodeUnavailable},
		{"budget", &llm.BudgetError{}, schemas.CodeBudgetExceeded},
		{"given code wins", schemas.WithCode(schemas.CodeRefused, fmt.Errorf("%w", llm.ErrUnavailable)), schemas.CodeRefused},
		{"result without code", &schemas.ResultError{Message: "?"}, schemas.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schemas.CodeOf(tc.err); got != tc.want {
				t.Errorf("CodeOf(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
	if got := schemas.CodeOr(errors.New("agent broke"), schemas.CodeAgentError); got != schemas.CodeAgentError {
		t.Errorf("CodeOr of an error without a code = %q, want the fallback %q", got, schemas.CodeAgentError)
	}
	if err := schemas.WithCode(schemas.CodeForbidden, state.ErrNotFound); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("WithCode hides what it wraps from errors.Is: %v", err)
	}
}
