package knowledge

import (
	"errors"

	"github.com/agentmesh/agentmesh/schemas"
)

var (
	// ErrNoBase reports a knowledge base that does not exist.
	ErrNoBase = schemas.NewError(schemas.CodeNotFound, "knowledge base not found")
	// ErrBaseExists reports creating a knowledge base whose name is taken.
	ErrBaseExists = errors.New("knowledge base exists")
	// ErrInvalidName reports a knowledge base name that cannot be used.
	ErrInvalidName = errors.New("invalid knowledge base name")
)
