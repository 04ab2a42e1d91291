package schemas

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// The merge rules a declared data type can name (DataTypeDefinition.Merge),
// for agents that cannot ship a merge function with their contract:
//
//   - append: arrays, b's items after a's;
//   - union: arrays, b's items after a's, leaving out items a holds (items
//     compare as JSON values);
//   - object: objects, b's keys over a's, nested objects merged the same way;
//   - sum: objects of numbers, the values of a key present in both added.
var mergeRules = map[string]MergeFunc{
	"append": mergeAppend,
	"union":  mergeUnion,
	"object": mergeObject,
	"sum":    mergeSum,
}

// MergeRules lists the merge rules a declared data type can name.
func MergeRules() []string { return slices.Sorted(maps.Keys(mergeRules)) }

func decodeOperands[T any](rule string, a, b json.RawMessage) (T, T, error) {
	var x, y T
	if err := json.Unmarshal(a, &x); err != nil {
		return x, y, fmt.Errorf("merge rule %s: first value: %w", rule, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return x, y, fmt.Errorf("merge rule %s: second value: %w", rule, err)
	}
	return x, y, nil
}

func mergeAppend(a, b json.RawMessage) (json.RawMessage, error) {
	x, y, err := decodeOperands[[]json.RawMessage]("append", a, b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(append(x, y...))
}

func mergeUnion(a, b json.RawMessage) (json.RawMessage, error) {
	x, y, err := decodeOperands[[]any]("union", a, b)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := make([]any, 0, len(x)+len(y))
	for _, item := range append(x, y...) {
		key, _ := json.Marshal(item) // map keys marshal sorted: one key per value
		if !seen[string(key)] {
			seen[string(key)] = true
			out = append(out, item)
		}
	}
	return json.Marshal(out)
}

func mergeObject(a, b json.RawMessage) (json.RawMessage, error) {
	x, y, err := decodeOperands[map[string]any]("object", a, b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(deepMerge(x, y))
}

func deepMerge(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]any{}
	}
	for k, vb := range b {
		ma, aObj := out[k].(map[string]any)
		mb, bObj := vb.(map[string]any)
		if aObj && bObj {
			out[k] = deepMerge(ma, mb)
			continue
		}
		out[k] = vb
	}
	return out
}

func mergeSum(a, b json.RawMessage) (json.RawMessage, error) {
	x, y, err := decodeOperands[map[string]json.Number]("sum", a, b)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(x)+len(y))
	for k, v := range x {
		out[k] = v
	}
	for k, v := range y {
		old, ok := x[k]
		if !ok {
			out[k] = v
			continue
		}
		if i, err1 := old.Int64(); err1 == nil {
			if j, err2 := v.Int64(); err2 == nil {
				out[k] = i + j
				continue
			}
		}
		f, _ := old.Float64()
		g, _ := v.Float64()
		out[k] = f + g
	}
	return json.Marshal(out)
}
