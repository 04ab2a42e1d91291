package schemas

import "encoding/json"

// The view of a value: what people and models are told about it. Each
// reads the value's descriptor; an unknown type is described generically,
// so a value is always describable.

// Count says how many things v holds: files, categories, links, ...; for a
// type with no Count of its own, the items of an array or the keys of an
// object, 1 for any other non-empty value, 0 for none.
func (r *DataTypeRegistry) Count(v TypedValue) int {
	if t, err := r.lookup(v.DataType); err == nil && t.Count != nil {
		return t.Count(v)
	}
	return genericCount(v.Value)
}

// Describe says in a few words what v holds: "12 images", "1 category",
// "text of 40 characters", "3 values".
func (r *DataTypeRegistry) Describe(v TypedValue) string {
	t, err := r.lookup(v.DataType)
	if err == nil && t.Describe != nil {
		return t.Describe(v)
	}
	unit := [2]string{"value", "values"}
	if err == nil && t.Unit[0] != "" {
		unit = t.Unit
	}
	return Plural(r.Count(v), unit[0], unit[1])
}

// Facts returns the small facts a model may read beside the count of v
// (category sizes, a text preview), or nil.
func (r *DataTypeRegistry) Facts(v TypedValue) map[string]any {
	if t, err := r.lookup(v.DataType); err == nil && t.Facts != nil {
		return t.Facts(v)
	}
	return nil
}

func genericCount(raw json.RawMessage) int {
	var x any
	if len(raw) == 0 || json.Unmarshal(raw, &x) != nil || x == nil {
		return 0
	}
	switch x := x.(type) {
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	return 1
}
