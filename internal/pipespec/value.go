package pipespec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ValueLike parses raw as a value of def's type, as agentmesh run --var
// reads a variable's value (and a fork's --param, a param's): a number or
// a boolean is parsed as one, a list from JSON or from items separated by
// commas, anything else stays a string.
func ValueLike(def any, raw string) (any, error) {
	switch def.(type) {
	case float64, float32, int, int64, int32, uint64, uint:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number, and the variable's default %v is", raw, def)
		}
		return f, nil
	case bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false, and the variable's default %v is", raw, def)
		}
		return b, nil
	case []any:
		// A list: a JSON array, or else items separated by commas.
		if strings.HasPrefix(strings.TrimSpace(raw), "[") {
			var list []any
			if err := json.Unmarshal([]byte(raw), &list); err != nil {
				return nil, fmt.Errorf("%q is not a JSON list (%v), and the variable's default is a list; write [\"a\",\"b\"] or a,b", raw, err)
			}
			return list, nil
		}
		var list []any
		for _, item := range strings.Split(raw, ",") {
			list = append(list, strings.TrimSpace(item))
		}
		return list, nil
	}
	return raw, nil
}
