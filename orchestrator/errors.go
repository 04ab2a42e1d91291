package orchestrator

import (
	"errors"
	"fmt"

	"github.com/agentmesh/agentmesh/schemas"
)

var (
	// ErrNotFound reports a conversation or run that is not in KV.
	ErrNotFound = errors.New("orchestrator: not found")
	// ErrExists reports a run whose id is already taken.
	ErrExists = errors.New("orchestrator: already exists")
	// ErrConflict reports a compare-and-set that kept losing to other writers.
	ErrConflict = errors.New("orchestrator: too many concurrent updates")
	// ErrTooLarge reports state that cannot be compacted under the KV value limit.
	ErrTooLarge = errors.New("orchestrator: state too large")
	// ErrMissingInput reports a required agent input that nothing can fill.
	ErrMissingInput = errors.New("required input has no source")
	// ErrInvalidPipeline reports a pipeline that fails validation. Errors
	// also match schemas.ErrInvalidPipeline.
	ErrInvalidPipeline = fmt.Errorf("orchestrator: %w", schemas.ErrInvalidPipeline)
	// ErrUnknownAgent reports an agent that is not live in the registry.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrCycle reports a pipeline whose depends_on edges form a cycle.
	ErrCycle = errors.New("dependency cycle")
	// ErrFanIn reports parallel parents feeding one input with a type that
	// cannot be merged.
	ErrFanIn = errors.New("non-mergeable fan-in")
	// ErrBadInputSource reports a step input mapped to a source that does
	// not exist.
	ErrBadInputSource = errors.New("bad input source")
	// ErrNoChat reports a chat request on a replica without a chat handler.
	ErrNoChat = errors.New("chat is not configured on this orchestrator")
	// ErrClosed reports use of a stopped orchestrator or dispatcher.
	ErrClosed = errors.New("orchestrator: closed")
)

// ErrUnchanged is returned by an update function to say that the state needs
// no write; StateStore then returns the current state without error.
var ErrUnchanged = errors.New("orchestrator: unchanged")
