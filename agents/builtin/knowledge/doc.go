// Package knowledge is the KnowledgeAgent and the knowledge bases it
// serves. A knowledge base is a named set of stored documents; each
// document is split into overlapping chunks along its structure (Markdown
// headings, paragraphs), and the chunks, with their embeddings when an
// embedding model is configured, are kept in the mesh's object store under
// IndexPrefix, one index object per document. Every instance of the agent
// reads the same index objects, so a new instance serves every knowledge
// base without rebuilding anything; a document whose content changes is
// chunked again on the first search after the change, alone.
//
// A search ranks chunks lexically with BM25, densely by the cosine of
// embeddings when a model is configured, and fuses the two rankings with
// reciprocal rank fusion.
package knowledge
