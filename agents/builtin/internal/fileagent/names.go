package fileagent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// DisplayName is a file's filename, else its ID.
func DisplayName(ref schemas.FileRef) string {
	if ref.Filename != "" {
		return ref.Filename
	}
	if n := ref.Metadata[resolvers.MetaFilename]; n != "" {
		return n
	}
	return ref.ID
}

// MediaTypeOf is a file's media type, or "of unknown type", to follow "is"
// in a message: "notes.txt is text/plain, not an image".
func MediaTypeOf(ref schemas.FileRef) string {
	if ref.MediaType == "" {
		return "of unknown type"
	}
	return ref.MediaType
}

// CountList renders groups of file IDs as "forest 4, sunset 5", by name.
func CountList(groups map[string][]string) string {
	names := make([]string, 0, len(groups))
	for k := range groups {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, len(groups[n]))
	}
	return strings.Join(parts, ", ")
}
