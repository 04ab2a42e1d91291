package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RemoteTool is one tool of a Remote as a model's tool loop calls it (the
// PromptAgent's prompt.WithTools): its name is made a valid function name
// the way agent names are (ToolAgentName), its schema is the tool's input
// schema, and a call returns the result's text.
type RemoteTool struct {
	remote *Remote
	tool   *mcp.Tool
	name   string
	schema json.RawMessage
}

// Tools returns the server's tools, only those named when names is not
// empty (a name the server does not offer is an error that lists them).
func (r *Remote) Tools(ctx context.Context, names ...string) ([]*RemoteTool, error) {
	var out []*RemoteTool
	var offered []string
	for tool, err := range r.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing the MCP server's tools: %w", err)
		}
		offered = append(offered, tool.Name)
		if len(names) > 0 && !slices.Contains(names, tool.Name) {
			continue
		}
		name, err := ToolAgentName("", tool.Name)
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil || tool.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, &RemoteTool{remote: r, tool: tool, name: name, schema: schema})
	}
	for _, n := range names {
		if !slices.Contains(offered, n) {
			return nil, fmt.Errorf("MCP server %q has no tool %q; it offers %s", r.ServerName(), n, strings.Join(offered, ", "))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w (server %q)", ErrNoTools, r.ServerName())
	}
	return out, nil
}

// Name is the tool's name as a function name.
func (t *RemoteTool) Name() string { return t.name }

// Description is the tool's title and description.
func (t *RemoteTool) Description() string { return toolDescription(t.tool) }

// InputSchema is the tool's input schema.
func (t *RemoteTool) InputSchema() json.RawMessage { return t.schema }

// Call calls the tool with args (a JSON object) and returns its text
// content, or its structured content as JSON when it has no text. A result
// with isError is an error carrying the result's text.
func (t *RemoteTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	res, err := t.remote.session.CallTool(ctx, &mcp.CallToolParams{Name: t.tool.Name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("calling MCP tool %s: %w", t.tool.Name, err)
	}
	text := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without text"
		}
		return "", errors.New(text)
	}
	if text == "" && res.StructuredContent != nil {
		js, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", err
		}
		text = string(js)
	}
	return text, nil
}
