package mcp

import "errors"

var (
	// ErrBadArguments reports tool-call arguments that cannot become a
	// task: they are not a JSON object.
	ErrBadArguments = errors.New("bad tool arguments")
	// ErrBadInput reports a tool argument for a typed input whose value
	// cannot be that input's (a number for a TEXT input, say).
	ErrBadInput = errors.New("bad input argument")
	// ErrNoTools reports an MCP server that lists no tool the mesh can use.
	ErrNoTools = errors.New("the MCP server offers no tools")
	// ErrToolName reports an MCP tool whose name cannot become an agent name.
	ErrToolName = errors.New("MCP tool name cannot be an agent name")
	// ErrMissingArgument reports a tool call missing an argument the tool
	// requires, given neither as a param nor as the mapped TEXT input.
	ErrMissingArgument = errors.New("missing tool argument")
)
