package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// MaxMessageBytes bounds a chat request's message: the turn keeps it in the
// chat record and the conversation's history, both KV values of at most
// state.DefaultMaxStateBytes, next to the earlier turns.
const MaxMessageBytes = 64 << 10

// codedError is an error with the code (schemas.Code*) its sender is told.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// withCode gives err the code a failed response carries.
func withCode(code string, err error) error { return &codedError{code: code, err: err} }

// failureCode is the code a turn that failed with err answers with: the
// code err carries (a coded error, an agent's ResultError), unavailable for
// a model endpoint that failed, invalid_request when the offline planner
// found no plan, and the state store's code (state.Code) otherwise.
func failureCode(err error) string {
	var (
		ce *codedError
		re *schemas.ResultError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &re):
		return re.Code
	case errors.Is(err, llm.ErrBudgetExceeded):
		return schemas.CodeBudgetExceeded
	case errors.Is(err, ErrNoPlan):
		return schemas.CodeInvalidRequest
	case errors.Is(err, bus.ErrInvalidName):
		return schemas.CodeInvalidID
	case errors.Is(err, llm.ErrUnavailable), errors.Is(err, llm.ErrRateLimited), errors.Is(err, llm.ErrUnauthorized),
		errors.Is(err, llm.ErrEmptyResponse), errors.Is(err, llm.ErrNotConfigured), errors.Is(err, llm.ErrInvalidRequest):
		return schemas.CodeUnavailable
	}
	return state.Code(err)
}

// toolFailure is the error a turn ends with when the agent call rec failed.
func toolFailure(rec schemas.ToolCallRecord) error {
	code := rec.Code
	if code == "" {
		code = schemas.CodeAgentError
	}
	return &schemas.ResultError{Code: code, Message: rec.Error}
}

// checkMessage refuses a message the turn cannot hold.
func checkMessage(msg string) error {
	if len(msg) > MaxMessageBytes {
		return withCode(schemas.CodeTooLarge, fmt.Errorf("message is %d bytes, over the limit of %d: send a shorter message, and put large content in files (agentmesh files put)", len(msg), MaxMessageBytes))
	}
	if strings.TrimSpace(msg) == "" {
		return withCode(schemas.CodeInvalidRequest, errors.New("message is empty: say what the mesh should do"))
	}
	return nil
}
