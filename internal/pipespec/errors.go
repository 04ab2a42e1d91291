package pipespec

import (
	"fmt"

	"github.com/agentmesh/agentmesh/schemas"
)

// ErrInvalidPipeline reports a pipeline spec that does not decode or fails
// its structural checks. It matches schemas.ErrInvalidPipeline; client
// exports it as client.ErrInvalidPipeline.
var ErrInvalidPipeline = fmt.Errorf("client: %w", schemas.ErrInvalidPipeline)
