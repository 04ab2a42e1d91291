package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Capabilities of the design. The set is open: any non-empty string is allowed.
const (
	CapSearch         = "SEARCH"
	CapAnalysis       = "ANALYSIS"
	CapOrganization   = "ORGANIZATION"
	CapGeneration     = "GENERATION"
	CapTransformation = "TRANSFORMATION"
	CapEvaluation     = "EVALUATION"
)

// TypedInput declares one input an agent reads.
type TypedInput struct {
	Name            string `json:"name"`
	DataType        string `json:"data_type"`
	Description     string `json:"description,omitempty"`
	Required        bool   `json:"required,omitempty"`
	ContentTypeHint string `json:"content_type_hint,omitempty"`
}

// TypedOutput declares one output an agent produces.
type TypedOutput struct {
	Name            string `json:"name"`
	DataType        string `json:"data_type"`
	Description     string `json:"description,omitempty"`
	Mergeable       bool   `json:"mergeable,omitempty"`
	ContentTypeHint string `json:"content_type_hint,omitempty"`
}

// AgentContract is what an agent announces: who it is, what it reads, what it
// produces, and the JSON Schema of its free parameters. The orchestrator
// routes data by these declarations, never by agent name.
type AgentContract struct {
	Name         string          `json:"name"`
	Version      string          `json:"version,omitempty"`
	Capability   string          `json:"capability"`
	Description  string          `json:"description"`
	Inputs       []TypedInput    `json:"inputs,omitempty"`
	Outputs      []TypedOutput   `json:"outputs,omitempty"`
	CanChainWith []string        `json:"can_chain_with,omitempty"`
	Params       json.RawMessage `json:"params,omitempty"`
	TimeoutMS    int64           `json:"timeout_ms,omitempty"`
	// DataTypes declares the data types of the agent's own that its inputs
	// and outputs use: the orchestrator validates, merges and slots their
	// values like a built-in type's (DataTypeRegistry.Declare).
	DataTypes []DataTypeDefinition `json:"data_types,omitempty"`
}

var (
	agentName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	slotName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// IsAgentName reports whether name has the shape of an agent name (also
// that of a step id or a pipeline name); ValidateAgentName says why not.
func IsAgentName(name string) bool { return agentName.MatchString(name) }

// IsSlotName reports whether name has the shape of a slot name (an
// input, output, state slot, seed value or variable).
func IsSlotName(name string) bool { return slotName.MatchString(name) }

// ValidateAgentName checks that name can be an agent name: 1 to 64 letters,
// digits, '-' or '_', so it is both a NATS subject token and a JetStream
// consumer name.
func ValidateAgentName(name string) error {
	if !agentName.MatchString(name) {
		return fmt.Errorf("agent name %q is not allowed: use 1 to 64 letters, digits, '-' or '_' (no dots, spaces or wildcards)", name)
	}
	return nil
}

// Validate reports every problem of the contract at once, checking data types
// against the default registry.
func (c AgentContract) Validate() error { return c.ValidateWith(DefaultRegistry()) }

// ValidateWith reports every problem of the contract at once, checking data
// types against reg. The error wraps ErrInvalidContract.
func (c AgentContract) ValidateWith(reg *DataTypeRegistry) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := ValidateAgentName(c.Name); err != nil {
		errs = append(errs, err)
	}
	if c.Capability == "" {
		bad("capability is empty: use SEARCH, ANALYSIS, ORGANIZATION, GENERATION, TRANSFORMATION, EVALUATION or your own")
	}
	if c.Description == "" {
		bad("description is empty: planners and LLMs choose agents by it")
	}
	if c.TimeoutMS < 0 {
		bad("timeout_ms is %d; it must be 0 (no limit of the agent's own) or positive", c.TimeoutMS)
	}
	own, typeErrs := c.ownTypes(reg)
	errs = append(errs, typeErrs...)
	known := func(dataType string) bool {
		_, mine := own[dataType]
		_, ok := reg.Lookup(dataType)
		return mine || ok
	}
	mergeable := func(dataType string) bool {
		if def, mine := own[dataType]; mine {
			return def.Merge != ""
		}
		return reg.Mergeable(dataType)
	}
	names := map[string]bool{}
	for i, in := range c.Inputs {
		where := fmt.Sprintf("inputs[%d]", i)
		if !slotName.MatchString(in.Name) {
			bad("%s: name %q must be an identifier (letters, digits, _)", where, in.Name)
		} else if names["in:"+in.Name] {
			bad("%s: input %q is declared twice", where, in.Name)
		}
		names["in:"+in.Name] = true
		if !known(in.DataType) {
			bad("%s (%s): unknown data type %q; declare it in data_types (known: %v)", where, in.Name, in.DataType, reg.Names())
		}
	}
	for i, out := range c.Outputs {
		where := fmt.Sprintf("outputs[%d]", i)
		if !slotName.MatchString(out.Name) {
			bad("%s: name %q must be an identifier (letters, digits, _)", where, out.Name)
		} else if names["out:"+out.Name] {
			bad("%s: output %q is declared twice", where, out.Name)
		}
		names["out:"+out.Name] = true
		if !known(out.DataType) {
			bad("%s (%s): unknown data type %q; declare it in data_types (known: %v)", where, out.Name, out.DataType, reg.Names())
		} else if out.Mergeable && !mergeable(out.DataType) {
			bad("%s (%s): declared mergeable but data type %s has no merge function", where, out.Name, out.DataType)
		}
	}
	for _, other := range c.CanChainWith {
		if err := ValidateAgentName(other); err != nil {
			bad("can_chain_with: %v", err)
		}
	}
	if len(c.Params) > 0 {
		if _, err := compileSchema("params/"+c.Name, c.Params); err != nil {
			bad("params: %v", err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w %q: %w", ErrInvalidContract, c.Name, errors.Join(errs...))
}

// ownTypes checks the contract's declared data types without registering
// them and returns them by name.
func (c AgentContract) ownTypes(reg *DataTypeRegistry) (map[string]DataTypeDefinition, []error) {
	own := map[string]DataTypeDefinition{}
	var errs []error
	for i, def := range c.DataTypes {
		if t, err := reg.lookup(def.Name); err == nil && t.builtin {
			errs = append(errs, fmt.Errorf("data_types[%d]: %s is a built-in data type; declare only types of your own", i, def.Name))
			continue
		}
		if _, twice := own[def.Name]; twice {
			errs = append(errs, fmt.Errorf("data_types[%d]: %s is declared twice", i, def.Name))
			continue
		}
		t, err := def.dataType()
		if err == nil {
			_, err = compileType(t)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("data_types[%d] (%s): %w", i, def.Name, err))
		}
		own[def.Name] = def
	}
	return own, errs
}

// Input returns the declared input called name.
func (c AgentContract) Input(name string) (TypedInput, bool) {
	for _, in := range c.Inputs {
		if in.Name == name {
			return in, true
		}
	}
	return TypedInput{}, false
}

// Output returns the declared output called name.
func (c AgentContract) Output(name string) (TypedOutput, bool) {
	for _, out := range c.Outputs {
		if out.Name == name {
			return out, true
		}
	}
	return TypedOutput{}, false
}

// ValidateParams checks task parameters against the contract's params schema.
// A contract without one accepts any parameters.
func (c AgentContract) ValidateParams(params map[string]any) error {
	if len(c.Params) == 0 {
		return nil
	}
	sch, err := compileSchema("params/"+c.Name, c.Params)
	if err != nil {
		return err
	}
	if params == nil {
		params = map[string]any{}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("params of %s: %w", c.Name, err)
	}
	if probs := check(sch, raw); len(probs) > 0 {
		return &DocumentError{Schema: "params of " + c.Name, Problems: probs}
	}
	return nil
}
