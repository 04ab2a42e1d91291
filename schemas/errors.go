package schemas

import "errors"

var (
	// ErrInvalidValue reports a value that does not match its data type's schema.
	ErrInvalidValue = errors.New("invalid value")
	// ErrUnknownDataType reports a data type the registry does not know.
	ErrUnknownDataType = errors.New("unknown data type")
	// ErrNotMergeable reports a merge of a data type that has no merge function.
	ErrNotMergeable = errors.New("data type is not mergeable")
	// ErrSlotNotFound reports a read of an execution-context slot that was never written.
	ErrSlotNotFound = errors.New("slot not found")
	// ErrTypeMismatch reports a slot read with an expected type that differs from the stored one.
	ErrTypeMismatch = errors.New("data type mismatch")
	// ErrInvalidContract reports an agent contract that fails Validate.
	ErrInvalidContract = errors.New("invalid agent contract")
	// ErrInvalidDocument reports a wire document that fails its JSON Schema.
	ErrInvalidDocument = errors.New("document fails its schema")
	// ErrSpilled reports an operation that needs the IDs of a collection that
	// was spilled to the object store; resolve it first.
	ErrSpilled = errors.New("collection is spilled to the object store; resolve it first")
	// ErrInvalidPipeline reports a pipeline spec that fails its structural checks.
	ErrInvalidPipeline = NewError(CodeInvalidPipeline, "invalid pipeline")
	// ErrNoCaller reports an agent-to-agent call from an execution context
	// no agent runtime set up (see ExecutionContext.Call).
	ErrNoCaller = errors.New("no caller: agent-to-agent calls need the agent runtime")
)
