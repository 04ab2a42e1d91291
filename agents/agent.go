package agents

import (
	"context"

	"github.com/agentmesh/agentmesh/schemas"
)

// Agent is the unit users deploy: a contract that says what it reads and
// produces, and Execute that does the work. Execute reads its inputs from the
// execution context by the contract's input names and returns its outputs by
// the contract's output names. Returning an error fails the task; wrap it
// with Retryable to ask for a redelivery.
type Agent interface {
	Contract() schemas.AgentContract
	Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error)
}

// Func adapts a contract and a function to an Agent.
func Func(contract schemas.AgentContract, execute func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error)) Agent {
	return funcAgent{contract: contract, execute: execute}
}

type funcAgent struct {
	contract schemas.AgentContract
	execute  func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error)
}

func (f funcAgent) Contract() schemas.AgentContract { return f.contract }

func (f funcAgent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	return f.execute(ctx, ec)
}
