package pipeline

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// checkParams checks a step's params against its agent's params schema
// (types, enums, ranges, required ones), and names the params the schema
// does not declare even when it leaves additional properties open: a
// misspelt param is an error at submit, not a default at run time. A
// contract without a params schema accepts any params.
func checkParams(step pipelinespec.PipelineStep, c schemas.AgentContract) []error {
	if len(c.Params) == 0 {
		return nil
	}
	where := fmt.Sprintf("step %q (%s)", step.ID, step.Agent)
	var errs []error
	if err := c.ValidateParams(step.Params); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w: %w", where, ErrBadParams, err))
	}
	declared, open := declaredParams(c.Params)
	if open {
		return errs
	}
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(step.Params)) {
		if !slices.Contains(declared, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("%s: %w: %s does not take param %s (its params: %s); fix the name or remove it",
			where, ErrBadParams, c.Name, strings.Join(unknown, ", "), orNone(declared)))
	}
	return errs
}

// declaredParams reads the property names of a params schema. open is true
// when the schema already rules on undeclared properties itself
// (additionalProperties, patternProperties, unevaluatedProperties) or
// declares none, so no extra check applies.
func declaredParams(schema json.RawMessage) (names []string, open bool) {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Additional json.RawMessage            `json:"additionalProperties"`
		Pattern    json.RawMessage            `json:"patternProperties"`
		Unevaluate json.RawMessage            `json:"unevaluatedProperties"`
	}
	if json.Unmarshal(schema, &doc) != nil || len(doc.Properties) == 0 ||
		doc.Additional != nil || doc.Pattern != nil || doc.Unevaluate != nil {
		return nil, true
	}
	return slices.Sorted(maps.Keys(doc.Properties)), false
}
