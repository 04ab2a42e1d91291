package schemas

import "context"

// ValueResolver turns spilled values into inline ones and back: a FILE_IDS
// value whose collection was spilled to the object store is resolved before
// an agent or a merge reads it, and a large one is spilled before it is
// published. resolvers.Collections implements it. Both methods return values
// of other types unchanged.
type ValueResolver interface {
	ResolveValue(ctx context.Context, v TypedValue) (TypedValue, error)
	SpillValue(ctx context.Context, v TypedValue) (TypedValue, error)
}
