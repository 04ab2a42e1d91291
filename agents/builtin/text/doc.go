// Package text is a small built-in agent that transforms TEXT: upper, lower,
// reverse, title case or a word count. It exercises the agent runtime end to
// end without any external service, and its delay_ms parameter holds a task
// in flight for tests of redelivery, drain and cancellation.
package text
