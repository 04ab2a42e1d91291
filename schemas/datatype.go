package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// DataType describes one data type, once: what it means, the JSON Schema
// every value satisfies, how two values merge, which state slot values go
// to, and how people and models are told about a value. Adding a data type
// is one DataType: the router, the input builder, the chat's rendering and
// the CLI all read it from the registry.
//
// Built-in types come with NewRegistry; a Go program adds its own with
// Register; an agent in any language declares one on the wire in its
// contract (AgentContract.DataTypes), which Declare turns into a DataType.
type DataType struct {
	Name        string
	Description string
	// Schema is the JSON Schema of a value; empty accepts any JSON value.
	Schema json.RawMessage
	// Merge combines two values (nil: a new value replaces the old one).
	// MergeRule names it for a declared type (see MergeRules).
	Merge     MergeFunc
	MergeRule string
	// Slots names the state slot values go to by content type hint; the ""
	// entry serves any hint not listed. No entries: values are kept in
	// history only.
	Slots map[string]string
	// Count says how many things a value holds (files, categories, links);
	// nil counts array items or object keys, 1 for any other non-empty
	// value. Unit names one and many of them ("category", "categories";
	// default "value", "values").
	Count func(TypedValue) int
	Unit  [2]string
	// Describe says in a few words what a value holds ("12 images"); nil:
	// Count with Unit.
	Describe func(TypedValue) string
	// Facts are small facts a model may read beside the count (category
	// sizes, a text preview); nil: none.
	Facts func(TypedValue) map[string]any
}

// DataTypeDefinition is a data type as it travels on the wire: in a
// contract's data_types and in Lookup's answer. Merge names one of
// MergeRules (empty: values replace each other); Slot is the state slot
// values go to (default current_<name in lower case>).
type DataTypeDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Mergeable   bool            `json:"mergeable,omitempty"`
	Merge       string          `json:"merge,omitempty"`
	Slot        string          `json:"slot,omitempty"`
}

// MergeFunc combines two values of one data type into one, a before b.
type MergeFunc func(a, b json.RawMessage) (json.RawMessage, error)

// ValueError reports a value that failed its data type's schema, naming the
// type, the agent that sent or received it, and each offending field.
type ValueError struct {
	DataType string
	Agent    string // may be empty
	Slot     string // input or output name; may be empty
	Problems []Problem
}

func (e *ValueError) Error() string {
	var b strings.Builder
	b.WriteString(e.DataType)
	b.WriteString(" value")
	if e.Slot != "" {
		fmt.Fprintf(&b, " %q", e.Slot)
	}
	if e.Agent != "" {
		fmt.Fprintf(&b, " of agent %s", e.Agent)
	}
	b.WriteString(" is invalid: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		if p.Field != "" {
			fmt.Fprintf(&b, "field %s: ", p.Field)
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

// Unwrap lets errors.Is match ErrInvalidValue.
func (e *ValueError) Unwrap() error { return ErrInvalidValue }

type dataType struct {
	DataType
	schema     *schemaNode
	builtin    bool
	declaredBy string // the agent whose contract declared it; "" for Register
}

// DataTypeRegistry knows every data type, validates values against their
// schemas, merges mergeable ones, routes them to slots and describes them.
// It is safe for concurrent use.
type DataTypeRegistry struct {
	mu    sync.RWMutex
	types map[string]*dataType
}

var typeName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// NewRegistry returns a registry holding the built-in data types.
func NewRegistry() *DataTypeRegistry {
	if err := wire.load(); err != nil {
		panic("schemas: embedded schemas are broken: " + err.Error())
	}
	r := &DataTypeRegistry{types: map[string]*dataType{}}
	for _, t := range builtinTypes() {
		raw, err := SchemaDocument("types/" + t.Name)
		if err != nil {
			panic("schemas: embedded schema for " + t.Name + " missing: " + err.Error())
		}
		t.Schema = raw
		r.types[t.Name] = &dataType{DataType: t, schema: wire.byName["types/"+t.Name], builtin: true}
	}
	return r
}

var defaultRegistry = NewRegistry()

// DefaultRegistry is the process-wide registry used when no other is given.
func DefaultRegistry() *DataTypeRegistry { return defaultRegistry }

// Register adds a data type described in Go. Its name must be an
// identifier, its schema must compile, and a built-in type cannot be
// replaced; registering a name again replaces the earlier registration.
func (r *DataTypeRegistry) Register(t DataType) error {
	dt, err := compileType(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.conflicts(dt); err != nil {
		return err
	}
	r.types[t.Name] = dt
	return nil
}

// compileType checks t and compiles its schema.
func compileType(t DataType) (*dataType, error) {
	var errs []error
	if !typeName.MatchString(t.Name) {
		errs = append(errs, fmt.Errorf("data type name %q must start with a letter and hold only letters, digits and _", t.Name))
	}
	for hint, slot := range t.Slots {
		if !slotName.MatchString(slot) {
			errs = append(errs, fmt.Errorf("data type %s: slot %q for hint %q must be an identifier (letters, digits, _)", t.Name, slot, hint))
		}
	}
	if len(t.Schema) == 0 {
		t.Schema = json.RawMessage(`true`)
	}
	sch, err := compileSchema("types/"+t.Name, t.Schema)
	if err != nil {
		errs = append(errs, fmt.Errorf("data type %s: %w", t.Name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	t.Slots = maps.Clone(t.Slots)
	return &dataType{DataType: t, schema: sch}, nil
}

// conflicts refuses replacing a built-in type and a slot another type
// already fills. r.mu is held.
func (r *DataTypeRegistry) conflicts(dt *dataType) error {
	if old, ok := r.types[dt.Name]; ok && old.builtin {
		return fmt.Errorf("data type %s is built in and cannot be replaced; choose another name", dt.Name)
	}
	for _, slot := range dt.Slots {
		for _, other := range r.types {
			if other.Name == dt.Name {
				continue
			}
			for _, s := range other.Slots {
				if s == slot {
					return fmt.Errorf("data type %s: slot %s is already filled by data type %s; choose another slot", dt.Name, slot, other.Name)
				}
			}
		}
	}
	return nil
}

// Declare registers a data type an agent declared on the wire in its
// contract (by names the agent). Declaring a type again with the same
// definition changes nothing; a different definition of a declared name,
// any declaration of a built-in name, a merge rule that does not exist or
// a slot that another type fills is refused with an error naming both.
func (r *DataTypeRegistry) Declare(def DataTypeDefinition, by string) error {
	t, err := def.dataType()
	if err != nil {
		return fmt.Errorf("data type %s declared by %s: %w", def.Name, by, err)
	}
	dt, err := compileType(t)
	if err != nil {
		return fmt.Errorf("declared by %s: %w", by, err)
	}
	dt.declaredBy = by
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.types[def.Name]; ok && !old.builtin {
		if sameDefinition(old.definition(), dt.definition()) {
			return nil
		}
		who := "a Go program"
		if old.declaredBy != "" {
			who = old.declaredBy
		}
		return fmt.Errorf("data type %s declared by %s differs from the one %s declared (%s); one name, one definition: rename one of them",
			def.Name, by, who, definitionDiff(old.definition(), dt.definition()))
	}
	if err := r.conflicts(dt); err != nil {
		return fmt.Errorf("declared by %s: %w", by, err)
	}
	r.types[def.Name] = dt
	return nil
}

// dataType turns a wire definition into a DataType with the generic view.
func (def DataTypeDefinition) dataType() (DataType, error) {
	t := DataType{Name: def.Name, Description: def.Description, Schema: def.Schema, MergeRule: def.Merge}
	if def.Merge != "" {
		m, ok := mergeRules[def.Merge]
		if !ok {
			return t, fmt.Errorf("merge rule %q does not exist; use one of %s", def.Merge, strings.Join(MergeRules(), ", "))
		}
		t.Merge = m
	} else if def.Mergeable {
		return t, fmt.Errorf("mergeable without a merge rule; set merge to one of %s", strings.Join(MergeRules(), ", "))
	}
	if strings.TrimSpace(def.Description) == "" {
		return t, errors.New("description is empty: planners and models choose agents by what their types mean")
	}
	slot := def.Slot
	if slot == "" {
		slot = "current_" + strings.ToLower(def.Name)
	}
	t.Slots = map[string]string{"": slot}
	return t, nil
}

// definition is the wire form of a registered type.
func (t *dataType) definition() DataTypeDefinition {
	def := DataTypeDefinition{Name: t.Name, Description: t.Description, Schema: t.Schema, Mergeable: t.Merge != nil, Merge: t.MergeRule}
	if !t.builtin {
		def.Slot = t.Slots[""]
	}
	return def
}

func sameDefinition(a, b DataTypeDefinition) bool {
	return definitionDiff(a, b) == ""
}

// definitionDiff names the fields in which a and b differ ("" when none);
// schemas compare as JSON values, not as text.
func definitionDiff(a, b DataTypeDefinition) string {
	var diff []string
	if a.Description != b.Description {
		diff = append(diff, "description")
	}
	if !jsonEqual(a.Schema, b.Schema) {
		diff = append(diff, "schema")
	}
	if a.Merge != b.Merge {
		diff = append(diff, fmt.Sprintf("merge %q vs %q", a.Merge, b.Merge))
	}
	if a.Slot != b.Slot {
		diff = append(diff, fmt.Sprintf("slot %q vs %q", a.Slot, b.Slot))
	}
	return strings.Join(diff, ", ")
}

func jsonEqual(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return string(ca) == string(cb)
}

func (r *DataTypeRegistry) lookup(name string) (*dataType, error) {
	r.mu.RLock()
	t, ok := r.types[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownDataType, name, strings.Join(r.Names(), ", "))
	}
	return t, nil
}

// Lookup returns a type's wire definition.
func (r *DataTypeRegistry) Lookup(name string) (DataTypeDefinition, bool) {
	t, err := r.lookup(name)
	if err != nil {
		return DataTypeDefinition{}, false
	}
	return t.definition(), true
}

// Type returns a type's descriptor.
func (r *DataTypeRegistry) Type(name string) (DataType, bool) {
	t, err := r.lookup(name)
	if err != nil {
		return DataType{}, false
	}
	return t.DataType, true
}

// Names lists the registered type names, sorted.
func (r *DataTypeRegistry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.types))
}

// Mergeable reports whether values of the type can be merged.
func (r *DataTypeRegistry) Mergeable(name string) bool {
	t, err := r.lookup(name)
	return err == nil && t.Merge != nil
}

// SlotFor returns the state slot values of dataType with content hint
// go to: the slot the type names for that hint, else its slot for any
// hint. ok is false for a type kept in history only and for an unknown
// type.
func (r *DataTypeRegistry) SlotFor(dataType, hint string) (slot string, ok bool) {
	t, err := r.lookup(dataType)
	if err != nil {
		return "", false
	}
	if s, found := t.Slots[hint]; found {
		return s, s != ""
	}
	s := t.Slots[""]
	return s, s != ""
}

// Validate checks a raw value against its type's schema. A failure is a
// *ValueError naming the type and each offending field.
func (r *DataTypeRegistry) Validate(dataType string, value json.RawMessage) error {
	t, err := r.lookup(dataType)
	if err != nil {
		return err
	}
	if probs := check(t.schema, value); len(probs) > 0 {
		return &ValueError{DataType: dataType, Problems: probs}
	}
	return nil
}

// ValidateValue checks a TypedValue, naming the agent and slot in any error.
func (r *DataTypeRegistry) ValidateValue(agent, slot string, v TypedValue) error {
	err := r.Validate(v.DataType, v.Value)
	if ve, ok := err.(*ValueError); ok {
		ve.Agent, ve.Slot = agent, slot
		return ve
	}
	if err != nil {
		return fmt.Errorf("value %q of agent %s: %w", slot, agent, err)
	}
	return nil
}

// Merge combines two values of a mergeable type, a before b. Both operands
// must satisfy the type's schema, and so must the merge of a declared type
// (a generic rule such as sum can break a schema's bounds).
func (r *DataTypeRegistry) Merge(dataType string, a, b json.RawMessage) (json.RawMessage, error) {
	t, err := r.lookup(dataType)
	if err != nil {
		return nil, err
	}
	if t.Merge == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotMergeable, dataType)
	}
	for i, v := range []json.RawMessage{a, b} {
		if probs := check(t.schema, v); len(probs) > 0 {
			return nil, fmt.Errorf("merge %s, operand %d: %w", dataType, i+1, &ValueError{DataType: dataType, Problems: probs})
		}
	}
	m, err := t.Merge(a, b)
	if err != nil {
		return nil, fmt.Errorf("merge %s: %w", dataType, err)
	}
	if t.MergeRule == "" {
		return m, nil // a built-in merge keeps its operands' schema
	}
	if probs := check(t.schema, m); len(probs) > 0 {
		return nil, fmt.Errorf("merge %s: the merged value: %w", dataType, &ValueError{DataType: dataType, Problems: probs})
	}
	return m, nil
}

// MergeValues merges two TypedValues of the same type, keeping a's hint unless
// the hints differ (then the merged hint is mixed for FILE_IDS, empty otherwise).
func (r *DataTypeRegistry) MergeValues(a, b TypedValue, source string) (TypedValue, error) {
	if a.DataType != b.DataType {
		return TypedValue{}, fmt.Errorf("%w: cannot merge %s with %s", ErrTypeMismatch, a.DataType, b.DataType)
	}
	raw, err := r.Merge(a.DataType, a.Value, b.Value)
	if err != nil {
		return TypedValue{}, err
	}
	out := TypedValue{DataType: a.DataType, ContentTypeHint: a.ContentTypeHint, Value: raw, Source: source, ProducedAt: b.ProducedAt}
	if a.ContentTypeHint != b.ContentTypeHint {
		out.ContentTypeHint = ""
		if a.DataType == TypeFileIDs {
			out.ContentTypeHint = ContentMixed
		}
	}
	return out, nil
}
