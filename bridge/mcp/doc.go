// Package mcp bridges the mesh and the Model Context Protocol both ways.
// Server makes a running mesh an MCP server: every live agent is a tool
// whose input schema comes from its contract, next to a chat tool and a
// run_pipeline tool, and stored files are resources. Remote connects to an
// MCP server and turns each of its tools into a mesh agent whose contract
// is derived from the tool's JSON Schemas. docs/bridges.md says how names,
// types, errors and states map.
package mcp
