package a2a

import "errors"

var (
	// ErrInvalidRequest reports a JSON-RPC request that does not decode or
	// is not a JSON-RPC 2.0 request object.
	ErrInvalidRequest = errors.New("a2a: invalid JSON-RPC request")
	// ErrInvalidParams reports a message the mesh cannot turn into a task:
	// a missing required input, a part of a kind the agent cannot take.
	ErrInvalidParams = errors.New("a2a: invalid params")
	// ErrTaskNotFound reports a task id this bridge does not know.
	ErrTaskNotFound = errors.New("a2a: task not found")
	// ErrTaskNotCancelable reports a cancel of a task already ended.
	ErrTaskNotCancelable = errors.New("a2a: task not cancelable")
	// ErrUnsupported reports an operation the bridge does not offer.
	ErrUnsupported = errors.New("a2a: unsupported operation")
	// ErrVersion reports an A2A-Version the bridge does not speak.
	ErrVersion = errors.New("a2a: version not supported")
	// ErrRemote reports a remote A2A agent that failed, refused a request
	// or answered something that is not A2A 1.0.
	ErrRemote = errors.New("a2a: remote agent")
	// ErrNoCard reports an agent card that could not be fetched or used.
	ErrNoCard = errors.New("a2a: agent card")
)

// ErrContentType reports a part of a kind the bridge does not take (a file
// by URL, say).
var ErrContentType = errors.New("a2a: content type not supported")
