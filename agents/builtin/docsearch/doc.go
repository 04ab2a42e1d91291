// Package docsearch is the DocumentSearchAgent: it searches the stored
// documents (plain text, Markdown, HTML, PDF) by filename, metadata and the
// words of their text, and ranks them. The keyword digest of each document
// is computed once and cached in its metadata.
package docsearch
