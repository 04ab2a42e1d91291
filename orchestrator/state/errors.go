package state

import (
	"errors"

	"github.com/agentmesh/agentmesh/schemas"
)

var (
	// ErrNotFound reports a conversation, run or key that is not in KV.
	ErrNotFound = errors.New("state: not found")
	// ErrExists reports a run whose id is already taken.
	ErrExists = errors.New("state: already exists")
	// ErrConflict reports a compare-and-set that kept losing to other writers.
	ErrConflict = errors.New("state: too many concurrent updates")
	// ErrTooLarge reports state that cannot be compacted under the KV value limit.
	ErrTooLarge = schemas.NewError(schemas.CodeTooLarge, "state: state too large")
	// ErrCorrupt reports a stored value that does not decode: garbage under
	// a conversation's or run's key.
	ErrCorrupt = schemas.NewError(schemas.CodeCorruptState, "state: stored value does not decode")
	// ErrUnchanged is returned by an update function to say that the state
	// needs no write; the Store then returns the current state without error.
	ErrUnchanged = errors.New("state: unchanged")
)
