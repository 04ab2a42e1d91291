package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/schemas"
)

// Capability is the capability of the agents made from MCP tools.
const Capability = "MCP_TOOL"

// TypeJSON is the data type of an MCP tool's structured result: any JSON
// value, in slot current_json. Every agent made from a tool with an output
// schema declares it, the same way each time.
const TypeJSON = "JSON"

// Output names of the agents made from MCP tools.
const (
	OutputText = "text" // the tool result's text content
	OutputJSON = "json" // its structured content, for tools with an output schema
)

var jsonType = schemas.DataTypeDefinition{
	Name:        TypeJSON,
	Description: "Any JSON value: the structured result of an MCP tool.",
	Slot:        "current_json",
}

// ToolAgentName is the agent name of tool name under prefix: characters an
// agent name cannot hold (anything but letters, digits, '-' and '_') become
// '_'. It fails with ErrToolName when the result is empty or longer than
// 64 characters.
func ToolAgentName(prefix, name string) (string, error) {
	var b strings.Builder
	for _, r := range prefix + name {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if err := schemas.ValidateAgentName(out); err != nil {
		return "", fmt.Errorf("%w: %q (prefix %q) gives %q: %v; choose a shorter --mcp-prefix", ErrToolName, name, prefix, out, err)
	}
	return out, nil
}

// ToolContract derives the contract of the agent that calls tool:
//
//   - name: prefix + the tool's name (ToolAgentName); description: the
//     tool's title and description; capability MCP_TOOL;
//   - params: the tool's input schema, so a step's params or a chat tool
//     call's arguments are the tool's arguments;
//   - one optional TEXT input named after the tool's text argument (the
//     first required string argument, else its only string argument),
//     which fills that argument when the params leave it out; the argument
//     is then no longer required by the params schema;
//   - outputs: text (TEXT, the result's text content) and, when the tool
//     declares an output schema, json (JSON, its structured content).
//
// It returns the contract and how the TEXT input maps to an argument.
func ToolContract(tool *mcp.Tool, prefix string) (schemas.AgentContract, TextMapping, error) {
	name, err := ToolAgentName(prefix, tool.Name)
	if err != nil {
		return schemas.AgentContract{}, TextMapping{}, err
	}
	schema := map[string]any{}
	if tool.InputSchema != nil {
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil || json.Unmarshal(raw, &schema) != nil {
			return schemas.AgentContract{}, TextMapping{}, fmt.Errorf("MCP tool %q: its input schema is not a JSON object", tool.Name)
		}
	}
	if schema["type"] == nil {
		schema["type"] = "object"
	}
	textArg := textArgument(schema)
	mapping := TextMapping{Argument: textArg, Required: textArg != "" && slices.Contains(requiredOf(schema), textArg)}
	c := schemas.AgentContract{
		Name:        name,
		Version:     "1.0.0",
		Capability:  Capability,
		Description: toolDescription(tool),
		Outputs:     []schemas.TypedOutput{{Name: OutputText, DataType: schemas.TypeText, Description: "the text content of the tool's result"}},
	}
	if textArg != "" {
		desc := "fills the tool's argument " + textArg + " when the params leave it out"
		props, _ := schema["properties"].(map[string]any)
		if p, ok := props[textArg].(map[string]any); ok {
			if d, ok := p["description"].(string); ok && d != "" {
				desc = d + " (" + desc + ")"
			}
		}
		c.Inputs = []schemas.TypedInput{{Name: textArg, DataType: schemas.TypeText, Description: desc}}
		req := slices.DeleteFunc(requiredOf(schema), func(s string) bool { return s == textArg })
		if len(req) == 0 {
			delete(schema, "required")
		} else {
			schema["required"] = req
		}
	}
	if tool.OutputSchema != nil {
		c.Outputs = append(c.Outputs, schemas.TypedOutput{Name: OutputJSON, DataType: TypeJSON, Description: "the tool's structured result"})
		c.DataTypes = []schemas.DataTypeDefinition{jsonType}
	}
	if c.Params, err = json.Marshal(schema); err != nil {
		return schemas.AgentContract{}, TextMapping{}, err
	}
	if err := c.Validate(); err != nil {
		return schemas.AgentContract{}, TextMapping{}, fmt.Errorf("MCP tool %q: %w", tool.Name, err)
	}
	return c, mapping, nil
}

// TextMapping says which argument of a tool the TEXT input of its agent
// fills, and whether the tool requires that argument (given as a param or
// as the input).
type TextMapping struct {
	Argument string // "" when the tool has no text argument
	Required bool
}

// textArgument picks the argument a TEXT input fills: the first required
// argument of type string, else the only string argument.
func textArgument(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	isString := func(name string) bool {
		p, _ := props[name].(map[string]any)
		return p != nil && p["type"] == "string"
	}
	for _, r := range requiredOf(schema) {
		if isString(r) {
			return r
		}
	}
	var only string
	for name := range props {
		if isString(name) {
			if only != "" {
				return ""
			}
			only = name
		}
	}
	return only
}

func toolDescription(tool *mcp.Tool) string {
	var parts []string
	title := tool.Title
	if title == "" && tool.Annotations != nil {
		title = tool.Annotations.Title
	}
	if title != "" && title != tool.Name {
		parts = append(parts, title+".")
	}
	if d := strings.TrimSpace(tool.Description); d != "" {
		parts = append(parts, d)
	}
	parts = append(parts, "(MCP tool "+tool.Name+".)")
	return strings.Join(parts, " ")
}
