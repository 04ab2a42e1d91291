package agents

import (
	"context"

	"github.com/agentmesh/agentmesh/schemas"
)

// ValueResolver turns spilled values into inline ones and back.
// resolvers.Collections implements it: the runtime resolves spilled FILE_IDS
// inputs before Execute and spills large FILE_IDS outputs before publishing.
// Both methods return values of other types unchanged.
type ValueResolver interface {
	ResolveValue(ctx context.Context, v schemas.TypedValue) (schemas.TypedValue, error)
	SpillValue(ctx context.Context, v schemas.TypedValue) (schemas.TypedValue, error)
}
