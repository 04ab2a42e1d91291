// Package llmiface holds the two small model interfaces the built-in agents
// use: a text model for completions and a vision model that labels images.
// Agents take them as options and fall back to offline methods when they
// are nil, so the mesh works without any API key.
package llmiface
