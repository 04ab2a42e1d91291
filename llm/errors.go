package llm

import (
	"errors"

	"github.com/agentmesh/agentmesh/schemas"
)

// The errors that mean the model endpoint failed carry the code unavailable
// and ErrBudgetExceeded budget_exceeded (schemas.CodeOf).
var (
	// ErrNotConfigured is returned by New when neither an API key nor a base
	// URL is set.
	ErrNotConfigured = schemas.NewError(schemas.CodeUnavailable, "llm: not configured")
	// ErrUnauthorized means the endpoint refused the API key (HTTP 401 or 403).
	ErrUnauthorized = schemas.NewError(schemas.CodeUnavailable, "llm: API key refused")
	// ErrRateLimited means the endpoint kept answering 429 after every
	// retry, or the mesh's shared rate limit would not let the call go
	// before its deadline.
	ErrRateLimited = schemas.NewError(schemas.CodeUnavailable, "llm: rate limited")
	// ErrUnavailable means the endpoint kept failing (5xx or no connection)
	// after every retry.
	ErrUnavailable = schemas.NewError(schemas.CodeUnavailable, "llm: endpoint unavailable")
	// ErrEmptyResponse means the endpoint answered without any message.
	ErrEmptyResponse = schemas.NewError(schemas.CodeUnavailable, "llm: response has no message")
	// ErrInvalidRequest means a request cannot be put in the provider's
	// protocol, such as a tool whose parameters are not a JSON object.
	ErrInvalidRequest = schemas.NewError(schemas.CodeUnavailable, "llm: invalid request")
	// ErrBudgetExceeded means a call was not made because it would cross a
	// budget (WithBudget); the error is a *BudgetError naming it.
	ErrBudgetExceeded = schemas.NewError(schemas.CodeBudgetExceeded, "budget_exceeded")
	// ErrInvalidConfig reports a bad setting, such as malformed AGENTMESH_PRICES.
	ErrInvalidConfig = errors.New("llm: invalid configuration")
	// ErrRefused means a policy refused a model call, an answer or a tool
	// call (a *RefusedError says which and why).
	ErrRefused = errors.New("llm: refused by policy")
	// ErrApprovalRequired means a policy holds a tool call until a person
	// approves it (a *ApprovalError says which).
	ErrApprovalRequired = errors.New("llm: approval required")
)
