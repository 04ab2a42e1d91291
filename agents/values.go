package agents

import "github.com/agentmesh/agentmesh/schemas"

// ValueResolver turns spilled values into inline ones and back; see
// schemas.ValueResolver. The runtime resolves spilled FILE_IDS inputs before
// Execute and spills large FILE_IDS outputs before publishing.
type ValueResolver = schemas.ValueResolver
