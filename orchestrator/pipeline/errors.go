package pipeline

import (
	"errors"
	"fmt"

	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

var (
	// ErrInvalidPipeline reports a pipeline that fails validation. Errors
	// also match schemas.ErrInvalidPipeline.
	ErrInvalidPipeline = fmt.Errorf("pipeline: %w", schemas.ErrInvalidPipeline)
	// ErrUnknownAgent reports an agent that is not live in the registry.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrCycle reports a pipeline whose depends_on edges form a cycle.
	ErrCycle = pipelinespec.ErrCycle
	// ErrFanIn reports parallel parents feeding one input with a type that
	// cannot be merged.
	ErrFanIn = errors.New("non-mergeable fan-in")
	// ErrBadParams reports step params that fail the agent's params schema
	// or that the agent does not declare.
	ErrBadParams = errors.New("bad params")
	// ErrBadInputSource reports a step input mapped to a source that does
	// not exist.
	ErrBadInputSource = errors.New("bad input source")
	// ErrUnknownVar reports a reference to a workflow variable the spec
	// does not declare, or a variable left without a value.
	ErrUnknownVar = errors.New("unknown variable")
	// ErrBadCondition reports a condition (when) that does not compile,
	// names what does not exist or is not a boolean.
	ErrBadCondition = errors.New("bad condition")
	// ErrBadFork reports a fork request (schemas.ForkRequest) that names
	// no step of its run, or changes what a kept step ran with. Errors
	// also match ErrInvalidPipeline.
	ErrBadFork = fmt.Errorf("%w: fork", ErrInvalidPipeline)
	// ErrNoOrigin reports a fork of a run that does not exist (code
	// not_found).
	ErrNoOrigin = schemas.NewError(schemas.CodeNotFound, "no run to fork")
)

// ErrConfig reports a Scheduler made without what it needs (see New).
var ErrConfig = errors.New("pipeline: scheduler configuration")
