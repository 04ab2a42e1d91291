package resolvers

import "strings"

// KnowledgePrefix starts the object name of every knowledge base
// definition and document index (agents/builtin/knowledge). Like spilled
// collections they live in the file store but are not files.
const KnowledgePrefix = "knowledge/"

// Reserved reports whether an object of the file store is the mesh's own
// (a spilled collection, a knowledge base or its index) rather than a
// file: List and the index skip it, and no file operation takes its name.
func Reserved(name string) bool {
	return strings.HasPrefix(name, CollectionPrefix) || strings.HasPrefix(name, KnowledgePrefix)
}
