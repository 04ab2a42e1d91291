package meshcore

import "errors"

var (
	// ErrUndecodableResult reports a result of an awaited task that could
	// not be decoded (see UndecodableResultError).
	ErrUndecodableResult = errors.New("client: undecodable result")
	// ErrInvalidAnnouncement reports an announcement the registry left
	// out (see Refusal).
	ErrInvalidAnnouncement = errors.New("invalid announcement")
)
