package orchestrator

import "errors"

// ErrNoChat reports a chat request on a replica without a chat handler.
var ErrNoChat = errors.New("chat is not configured on this orchestrator")
