package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// SlotRefPrefix starts a tool argument that names a state slot instead of a
// literal value: "†state.current_image_ids".
const SlotRefPrefix = "†state."

// ErrBadToolCall reports tool-call arguments the orchestrator cannot use:
// malformed JSON, a reference to an empty slot, params that fail the
// contract's schema. It goes back to the model as an observation.
var ErrBadToolCall = errors.New("bad tool call")

// emptyParams is the parameters schema of an agent without free parameters.
var emptyParams = json.RawMessage(`{"type":"object","properties":{}}`)

// Tools returns one function tool per agent, sorted by agent name, each
// generated from the agent's contract. router, when not nil, lets the
// description say which state slot each input is read from.
func Tools(contracts []schemas.AgentContract, router *route.Router) []llm.Tool {
	sorted := slices.Clone(contracts)
	slices.SortFunc(sorted, func(a, b schemas.AgentContract) int { return strings.Compare(a.Name, b.Name) })
	tools := make([]llm.Tool, 0, len(sorted))
	for _, c := range sorted {
		tools = append(tools, Tool(c, router))
	}
	return tools
}

// Tool returns the function tool of one agent: named after the agent, its
// description the contract's description with capability, inputs and
// outputs, its parameters the contract's params JSON Schema with one more
// property per typed input: a literal value of the input's type, or a
// "†state.<slot>" reference.
func Tool(c schemas.AgentContract, router *route.Router) llm.Tool {
	return llm.Tool{
		Name:        c.Name,
		Description: toolDescription(c, router),
		Parameters:  toolParameters(c, dataTypes(router)),
	}
}

// toolParameters is the contract's params schema with a property for each
// typed input the params do not already name.
func toolParameters(c schemas.AgentContract, reg *schemas.DataTypeRegistry) json.RawMessage {
	params := c.Params
	if len(bytes.TrimSpace(params)) == 0 {
		params = emptyParams
	}
	if len(c.Inputs) == 0 {
		return params
	}
	var doc map[string]any
	if json.Unmarshal(params, &doc) != nil {
		return params // the contract's validation reports a broken schema
	}
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	for _, in := range c.Inputs {
		if _, taken := props[in.Name]; !taken {
			props[in.Name] = inputProperty(in, reg)
		}
	}
	doc["properties"] = props
	out, err := json.Marshal(doc)
	if err != nil {
		return params
	}
	return out
}

// inputProperty is the tool-argument schema of one typed input: the data
// type's own schema when it stands alone (TEXT: a string), else a string
// that references a slot.
func inputProperty(in schemas.TypedInput, reg *schemas.DataTypeRegistry) map[string]any {
	desc := strings.TrimSpace(in.Description)
	if desc != "" {
		desc += ". "
	}
	desc += fmt.Sprintf("A %s%s value; filled from state when left out, or give \"%s<slot>\" to read another slot.", in.DataType, route.HintSuffix(in.ContentTypeHint), SlotRefPrefix)
	if t, ok := reg.Type(in.DataType); ok && !bytes.Contains(t.Schema, []byte(`"$ref"`)) {
		var sch map[string]any
		if json.Unmarshal(t.Schema, &sch) == nil {
			for _, k := range []string{"$schema", "$id", "title"} {
				delete(sch, k)
			}
			if sch["type"] == "string" {
				sch["description"] = desc
				return sch
			}
			return map[string]any{"description": desc, "anyOf": []any{sch, map[string]any{"type": "string", "description": "a slot reference"}}}
		}
	}
	return map[string]any{"type": "string", "description": desc + " Give a slot reference here."}
}

func toolDescription(c schemas.AgentContract, router *route.Router) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(c.Description))
	fmt.Fprintf(&b, "\nCapability: %s.", c.Capability)
	if len(c.Inputs) > 0 {
		b.WriteString("\nReads from state:")
		for _, in := range c.Inputs {
			fmt.Fprintf(&b, " %s (%s%s", in.Name, in.DataType, route.HintSuffix(in.ContentTypeHint))
			if in.Required {
				b.WriteString(", required")
			}
			if router != nil {
				if slot, ok := router.SlotFor(in.DataType, in.ContentTypeHint); ok {
					fmt.Fprintf(&b, ", from %s%s", SlotRefPrefix, slot)
				}
			}
			b.WriteString(");")
		}
		fmt.Fprintf(&b, " filled automatically; pass {\"<input>\": \"%s<slot>\"} to use another slot.", SlotRefPrefix)
	} else {
		b.WriteString("\nReads nothing from state.")
	}
	if len(c.Outputs) > 0 {
		b.WriteString("\nProduces:")
		for _, out := range c.Outputs {
			fmt.Fprintf(&b, " %s (%s%s", out.Name, out.DataType, route.HintSuffix(out.ContentTypeHint))
			if router != nil {
				if slot, ok := router.SlotFor(out.DataType, out.ContentTypeHint); ok {
					fmt.Fprintf(&b, ", into %s%s", SlotRefPrefix, slot)
				}
			}
			b.WriteString(");")
		}
	}
	if len(c.CanChainWith) > 0 {
		fmt.Fprintf(&b, "\nUsually followed by: %s.", strings.Join(c.CanChainWith, ", "))
	}
	return b.String()
}

// ToolArgs is a tool call's arguments split into the agent's free params,
// slot references for its inputs (input name -> slot) and literal values
// of its inputs (input name -> value).
type ToolArgs struct {
	Params   map[string]any
	Refs     map[string]string
	Literals map[string]schemas.TypedValue
}

// ParseToolArgs decodes the JSON arguments of a tool call for the agent
// with contract c. A string value "†state.<slot>" under an input's name
// selects the slot that input reads; under another key it feeds the first
// input whose data type matches the slot's (slots says which types they
// hold). Any other value under an input's name is a literal of the input's
// type, checked against reg's schema of it. Everything else is a param,
// checked against the contract's params schema. Errors wrap ErrBadToolCall
// and say what to send instead.
func ParseToolArgs(c schemas.AgentContract, raw string, slots map[string]schemas.TypedValue, reg *schemas.DataTypeRegistry) (ToolArgs, error) {
	args := ToolArgs{Params: map[string]any{}, Refs: map[string]string{}, Literals: map[string]schemas.TypedValue{}}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = "{}"
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return args, fmt.Errorf("%w: arguments of %s are not a JSON object (%v): send an object such as {\"query\": \"sunset\"}", ErrBadToolCall, c.Name, err)
	}
	if dec.More() {
		return args, fmt.Errorf("%w: arguments of %s have trailing data after the JSON object", ErrBadToolCall, c.Name)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s, isString := m[k].(string)
		if !isString || !strings.HasPrefix(s, SlotRefPrefix) {
			if in, declared := c.Input(k); declared && !paramsName(c, k) {
				v, err := literal(c, in, m[k], reg)
				if err != nil {
					return args, err
				}
				args.Literals[k] = v
				continue
			}
			args.Params[k] = normalizeNumbers(m[k])
			continue
		}
		slot := strings.TrimPrefix(s, SlotRefPrefix)
		v, ok := slots[slot]
		if !ok {
			return args, fmt.Errorf("%w: argument %q of %s references slot %q, which is empty (filled slots: %s)", ErrBadToolCall, k, c.Name, slot, slotList(slots))
		}
		input := ""
		if in, declared := c.Input(k); declared {
			if in.DataType != v.DataType {
				return args, fmt.Errorf("%w: input %q of %s takes %s but slot %q holds %s", ErrBadToolCall, k, c.Name, in.DataType, slot, v.DataType)
			}
			input = k
		} else {
			for _, in := range c.Inputs {
				if _, taken := args.Refs[in.Name]; !taken && in.DataType == v.DataType {
					input = in.Name
					break
				}
			}
			if input == "" {
				return args, fmt.Errorf("%w: argument %q of %s references slot %q (%s), but %s has no input of that type", ErrBadToolCall, k, c.Name, slot, v.DataType, c.Name)
			}
		}
		args.Refs[input] = slot
	}
	if err := c.ValidateParams(args.Params); err != nil {
		return args, fmt.Errorf("%w: %v", ErrBadToolCall, err)
	}
	return args, nil
}

// literal makes the value x given for input in a TypedValue of its type.
func literal(c schemas.AgentContract, in schemas.TypedInput, x any, reg *schemas.DataTypeRegistry) (schemas.TypedValue, error) {
	raw, err := json.Marshal(normalizeNumbers(x))
	if err != nil {
		return schemas.TypedValue{}, fmt.Errorf("%w: input %q of %s: %v", ErrBadToolCall, in.Name, c.Name, err)
	}
	v := schemas.TypedValue{DataType: in.DataType, ContentTypeHint: in.ContentTypeHint, Value: raw, Source: "chat"}
	if err := reg.ValidateValue(c.Name, in.Name, v); err != nil {
		return v, fmt.Errorf("%w: %v; give a %s value or \"%s<slot>\"", ErrBadToolCall, err, in.DataType, SlotRefPrefix)
	}
	return v, nil
}

// paramsName reports whether the contract's params schema has a property
// called name (a param of that name wins over an input of that name).
func paramsName(c schemas.AgentContract, name string) bool {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(c.Params, &doc) != nil {
		return false
	}
	_, ok := doc.Properties[name]
	return ok
}

// normalizeNumbers turns json.Number into int64 or float64 so params carry
// plain JSON types.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
		return x
	default:
		return v
	}
}

func slotList(slots map[string]schemas.TypedValue) string {
	if len(slots) == 0 {
		return "none"
	}
	names := make([]string, 0, len(slots))
	for n := range slots {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
