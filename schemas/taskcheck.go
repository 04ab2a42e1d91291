package schemas

import (
	"encoding/json"
	"strconv"
	"time"
)

// ValidateTask checks the data of an io.agentmesh.task.requested event
// against the task schema (SchemaTask). A task the quick check below is
// sure of, the shape every mesh client sends, skips the schema validator,
// which costs more than the rest of a task's handling; anything else is
// validated by it, so an error is always the schema's own.
func ValidateTask(data []byte) error {
	if taskSurelyValid(data) {
		return nil
	}
	return ValidateJSON(SchemaTask, data)
}

// taskSurelyValid reports true only for data the task schema accepts: an
// object whose inputs, params, instruction and timeout_ms have the
// schema's types, each input a typed value. False means "ask the schema".
func taskSurelyValid(data []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || top == nil {
		return false
	}
	for k, raw := range top {
		var ok bool
		switch k {
		case "inputs":
			ok = inputsSurelyValid(raw)
		case "params":
			ok = raw[0] == '{'
		case "instruction":
			ok = raw[0] == '"'
		case "timeout_ms":
			_, err := strconv.ParseUint(string(raw), 10, 63)
			ok = err == nil
		default:
			ok = true // the schema allows other members
		}
		if !ok {
			return false
		}
	}
	return true
}

// inputsSurelyValid reports true only for an object of typed values
// (typed-value.schema.json).
func inputsSurelyValid(raw json.RawMessage) bool {
	var ins map[string]map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &ins) != nil {
		return false
	}
	for _, v := range ins {
		if v == nil || v["value"] == nil || !dataTypeName(v["data_type"]) {
			return false
		}
		for _, k := range []string{"content_type_hint", "source"} {
			if s, ok := v[k]; ok && s[0] != '"' {
				return false
			}
		}
		if at, ok := v["produced_at"]; ok && !plainDateTime(at) {
			return false
		}
	}
	return true
}

// dataTypeName reports a JSON string matching ^[A-Za-z][A-Za-z0-9_]*$.
func dataTypeName(raw json.RawMessage) bool {
	var s string
	if raw == nil || raw[0] != '"' || json.Unmarshal(raw, &s) != nil || s == "" {
		return false
	}
	for i, c := range s {
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_')) {
			return false
		}
	}
	return true
}

// plainDateTime reports a JSON string that is an RFC 3339 date-time
// exactly as Go writes them (time.Time's MarshalJSON), which the schema's
// date-time format accepts.
func plainDateTime(raw json.RawMessage) bool {
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && t.Year() >= 1000 && t.Format(time.RFC3339Nano) == s
}
