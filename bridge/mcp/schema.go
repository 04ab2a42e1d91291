package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// InputSchema is the MCP input schema of an agent's tool: the contract's
// params schema (an object) with one more property per typed input the
// params do not already name. A TEXT input takes a string, a FILE_IDS
// input an array of stored file ids (or a whole FileCollection object),
// any other input its data type's own JSON Schema when that schema stands
// alone, else any JSON value the agent checks. Required inputs are
// required properties.
func InputSchema(c schemas.AgentContract, reg *schemas.DataTypeRegistry) map[string]any {
	doc := map[string]any{}
	if len(bytes.TrimSpace(c.Params)) > 0 {
		_ = json.Unmarshal(c.Params, &doc) // a contract in the registry has a valid params schema
	}
	delete(doc, "$schema")
	delete(doc, "$id")
	doc["type"] = "object"
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	required := requiredOf(doc)
	for _, in := range c.Inputs {
		if _, taken := props[in.Name]; taken {
			continue // a param of the same name wins, as in the chat's tools
		}
		props[in.Name] = inputProperty(in, reg)
		if in.Required && !slices.Contains(required, in.Name) {
			required = append(required, in.Name)
		}
	}
	doc["properties"] = props
	if len(required) > 0 {
		doc["required"] = required
	}
	return doc
}

func requiredOf(doc map[string]any) []string {
	list, _ := doc["required"].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// inputProperty is the schema of one typed input's argument.
func inputProperty(in schemas.TypedInput, reg *schemas.DataTypeRegistry) map[string]any {
	desc := strings.TrimSpace(in.Description)
	if desc != "" {
		desc += ". "
	}
	hint := ""
	if in.ContentTypeHint != "" {
		hint = " (" + in.ContentTypeHint + ")"
	}
	switch in.DataType {
	case schemas.TypeText:
		return map[string]any{"type": "string", "description": desc + "TEXT input" + hint + "."}
	case schemas.TypeFileIDs:
		return map[string]any{
			"description": desc + "FILE_IDS input" + hint + ": ids of stored files (the files resources), or a FileCollection object.",
			"anyOf": []any{
				map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				map[string]any{"type": "object"},
			},
		}
	}
	desc += in.DataType + " input" + hint + "."
	if t, ok := reg.Type(in.DataType); ok && len(t.Schema) > 0 && !bytes.Contains(t.Schema, []byte(`"$ref"`)) {
		var sch map[string]any
		if json.Unmarshal(t.Schema, &sch) == nil {
			for _, k := range []string{"$schema", "$id", "title"} {
				delete(sch, k)
			}
			sch["description"] = desc
			return sch
		}
	}
	return map[string]any{"description": desc + " Any JSON value; the agent checks it against the type's schema."}
}

// TaskFromArgs splits a tool call's arguments into the task of the agent
// with contract c: a key naming a typed input (and no param) is that
// input's value, every other key a param. The agent validates both as it
// validates any task, so a bad value comes back with the mesh's code
// (invalid_input, invalid_params). Errors here wrap ErrBadArguments
// (the arguments are not an object) or ErrBadInput (an input's value has
// the wrong shape).
func TaskFromArgs(c schemas.AgentContract, raw json.RawMessage) (schemas.TaskRequest, error) {
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{}, Params: map[string]any{}}
	args := map[string]json.RawMessage{}
	if s := bytes.TrimSpace(raw); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		if err := json.Unmarshal(s, &args); err != nil {
			return task, fmt.Errorf("%w: the arguments of %s are not a JSON object (%v); send an object such as {\"text\": \"hello\"}", ErrBadArguments, c.Name, err)
		}
	}
	params := paramNames(c)
	for _, k := range slices.Sorted(maps.Keys(args)) {
		in, isInput := c.Input(k)
		if !isInput || params[k] {
			var v any
			dec := json.NewDecoder(bytes.NewReader(args[k]))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return task, fmt.Errorf("%w: argument %q of %s: %v", ErrBadArguments, k, c.Name, err)
			}
			task.Params[k] = v
			continue
		}
		v, err := inputValue(in, args[k])
		if err != nil {
			return task, fmt.Errorf("%w: argument %q of %s: %v", ErrBadInput, k, c.Name, err)
		}
		task.Inputs[k] = v
	}
	return task, nil
}

// inputValue builds the typed value of one input argument.
func inputValue(in schemas.TypedInput, raw json.RawMessage) (schemas.TypedValue, error) {
	switch in.DataType {
	case schemas.TypeText:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return schemas.TypedValue{}, fmt.Errorf("a TEXT input takes a string, not %s", clip(raw))
		}
		v := schemas.TextValue(s, "mcp")
		v.ContentTypeHint = in.ContentTypeHint
		return v, nil
	case schemas.TypeFileIDs:
		var ids []string
		if json.Unmarshal(raw, &ids) == nil {
			hint := in.ContentTypeHint
			if hint == "" {
				hint = "mixed"
			}
			v := schemas.FilesValue(schemas.FromIDs(hint, ids...), "mcp")
			v.ContentTypeHint = in.ContentTypeHint
			return v, nil
		}
	}
	return schemas.TypedValue{DataType: in.DataType, ContentTypeHint: in.ContentTypeHint, Value: slices.Clone(raw), Source: "mcp"}, nil
}

func paramNames(c schemas.AgentContract) map[string]bool {
	out := map[string]bool{}
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(c.Params, &doc) == nil {
		for k := range doc.Properties {
			out[k] = true
		}
	}
	return out
}

func clip(raw []byte) string { return schemas.Clip(string(raw), 80) }
