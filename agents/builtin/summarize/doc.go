// Package summarize is the SummarizeAgent: it extracts the text of stored
// documents (plain text, Markdown, HTML, PDF) and summarises them, with the
// configured LLM when there is one and otherwise extractively, by picking
// each document's most representative sentences. It says which it used.
package summarize
