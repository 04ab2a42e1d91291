package schemas

import (
	"bytes"
	"encoding/json"
	"sync"
)

// typeOnly remembers, for each compiled schema that constrains nothing but
// the JSON type of the whole document ({"type": "string"}, as TEXT's, with
// only annotations beside it), which first byte that type starts with. A
// value of such a type needs no schema walk: it is valid exactly when it is
// valid JSON starting with that byte, so check answers it with json.Valid
// instead of decoding the value into the validator's generic tree.
// Written once per compiled schema (compileSchema), read by check.
var typeOnly sync.Map // *schemaNode -> byte

// annotationKeywords are the keywords that describe a schema without
// constraining its instances.
var annotationKeywords = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"examples": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// typeOnlyStart returns the first byte of a document of the one JSON type
// raw constrains, and false when raw is not a schema that only names a
// string, object or array type.
func typeOnlyStart(raw []byte) (byte, bool) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return 0, false
	}
	var typ string
	for k, v := range doc {
		switch {
		case k == "type":
			if json.Unmarshal(v, &typ) != nil {
				return 0, false
			}
		case !annotationKeywords[k]:
			return 0, false
		}
	}
	switch typ {
	case "string":
		return '"', true
	case "object":
		return '{', true
	case "array":
		return '[', true
	}
	return 0, false
}

// typeOnlyValid reports whether doc is surely valid against a type-only
// schema whose documents start with start. False means "ask the schema",
// so its error is the validator's own.
func typeOnlyValid(start byte, doc []byte) bool {
	d := bytes.TrimLeft(doc, " \t\r\n")
	return len(d) > 0 && d[0] == start && json.Valid(d)
}
