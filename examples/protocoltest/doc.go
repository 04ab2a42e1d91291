// Package protocoltest keeps docs/protocol.md honest: its test reads every
// example event, KV value and control message in the document and checks it
// with the Go decoder (bus.Decode), the embedded JSON Schemas and the
// subject builders, so the wire contract as written cannot drift from the
// code. The package has no code of its own.
package protocoltest
