// Package route moves typed values between agents and state, by data type
// and content hint, never by agent name. The Router puts the outputs of a
// result into state slots (merging where an output is declared mergeable
// and its type can merge) and keeps the rest in history, idempotently by
// task id; the InputBuilder fills a contract's inputs from those slots.
//
// Both the chat loop and the pipeline scheduler use them, on conversations
// and on runs alike.
package route
