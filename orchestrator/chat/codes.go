package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// MaxMessageBytes bounds a chat request's message: the turn keeps it in the
// chat record and the conversation's history, both KV values of at most
// state.DefaultMaxStateBytes, next to the earlier turns.
const MaxMessageBytes = 64 << 10

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
		return schemas.WithCode(schemas.CodeTooLarge, fmt.Errorf("message is %d bytes, over the limit of %d: send a shorter message, and put large content in files (agentmesh files put)", len(msg), MaxMessageBytes))
	}
	if strings.TrimSpace(msg) == "" {
		return schemas.WithCode(schemas.CodeInvalidRequest, errors.New("message is empty: say what the mesh should do"))
	}
	return nil
}
