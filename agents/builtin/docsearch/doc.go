// Package docsearch is the DocumentSearchAgent: it searches the stored
// documents (plain text, Markdown, HTML, PDF) by filename, metadata and the
// words of their text, and ranks them. It also holds the text extraction the
// summarize agent shares.
package docsearch
