// Package samples generates, by code and from a fixed seed, the sample files
// of the demo and the tests: photographs-like images of sunsets, forests,
// seascapes, night cities and snow (gradients, noise and structure, never
// solid squares), and a few plain text, Markdown, HTML and PDF documents.
// The same call always returns the same bytes.
package samples
