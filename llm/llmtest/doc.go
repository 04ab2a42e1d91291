// Package llmtest is a scripted OpenAI-compatible Chat Completions server for
// tests: the real go-openai client talks HTTP to it, each test scripts the
// replies (answers, tool calls, malformed arguments, 429 with Retry-After,
// 401), and every request is recorded so tests can assert on the tools and
// messages the model was shown.
package llmtest
