// Package route moves typed values between agents and state, by data type
// and content hint, never by agent name. The Router puts the outputs of a
// result into state slots (merging where an output is declared mergeable
// and its type can merge) and keeps the rest in history, idempotently by
// task id; the InputBuilder fills a contract's inputs from those slots.
//
// The Router holds no routing table of its own: every data type's
// descriptor in its schemas.DataTypeRegistry names the type's slots, so a
// new type is one registration. Router.Declare learns the types an agent
// declares in its contract (data_types) the first time the orchestrator
// reads that contract; RegisterSlot adds a route of one router's own over
// the descriptors.
//
// Both the chat loop and the pipeline scheduler use them, on conversations
// and on runs alike.
package route
