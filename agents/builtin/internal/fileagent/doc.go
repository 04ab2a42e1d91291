// Package fileagent is what the built-in agents that work on stored files
// (analysis, docsearch, folder, imagesearch, summarize) share: their option
// type and constructor, the skeleton of Execute (read the inputs, resolve
// the files, record what was skipped and why, build the result), the ranking
// of a search, and the document text and search terms they read.
package fileagent
