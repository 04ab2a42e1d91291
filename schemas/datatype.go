package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DataTypeDefinition declares a data type: its name, what it means, and the
// JSON Schema every value of it must satisfy.
type DataTypeDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Mergeable   bool            `json:"mergeable"`
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
	def    DataTypeDefinition
	schema *jsonschema.Schema
	merge  MergeFunc
}

// DataTypeRegistry knows every data type, validates values against their
// schemas and merges mergeable ones. It is safe for concurrent use.
type DataTypeRegistry struct {
	mu    sync.RWMutex
	types map[string]*dataType
}

var typeName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

var builtinDescriptions = map[string]string{
	TypeFileIDs:        "An ordered set of stored file IDs (a FileCollection) with a content type: images, documents, links or mixed.",
	TypeCategorization: "File IDs grouped under category names.",
	TypeFolderResult:   "Which files were put into which folder.",
	TypeAnalysisResult: "Per-file findings: labels, caption and numeric features.",
	TypeText:           "Plain text.",
	TypeCrossRef:       "Typed links between files.",
}

// NewRegistry returns a registry holding the six built-in data types.
func NewRegistry() *DataTypeRegistry {
	r := &DataTypeRegistry{types: map[string]*dataType{}}
	merges := map[string]MergeFunc{TypeFileIDs: mergeFileIDs, TypeCategorization: mergeCategorization}
	for _, name := range []string{TypeFileIDs, TypeCategorization, TypeFolderResult, TypeAnalysisResult, TypeText, TypeCrossRef} {
		if err := wire.load(); err != nil {
			panic("schemas: embedded schemas are broken: " + err.Error())
		}
		raw, err := SchemaDocument("types/" + name)
		if err != nil {
			panic("schemas: embedded schema for " + name + " missing: " + err.Error())
		}
		r.types[name] = &dataType{
			def:    DataTypeDefinition{Name: name, Description: builtinDescriptions[name], Schema: raw, Mergeable: merges[name] != nil},
			schema: wire.byName["types/"+name],
			merge:  merges[name],
		}
	}
	return r
}

var defaultRegistry = NewRegistry()

// DefaultRegistry is the process-wide registry used when no other is given.
func DefaultRegistry() *DataTypeRegistry { return defaultRegistry }

// Register adds a custom data type. A mergeable type needs merge; the schema
// must compile. Re-registering a built-in type is refused.
func (r *DataTypeRegistry) Register(def DataTypeDefinition, merge MergeFunc) error {
	var errs []error
	if !typeName.MatchString(def.Name) {
		errs = append(errs, fmt.Errorf("data type name %q must start with a letter and hold only letters, digits and _", def.Name))
	}
	if def.Mergeable && merge == nil {
		errs = append(errs, fmt.Errorf("data type %s is declared mergeable but no merge function was given", def.Name))
	}
	if !def.Mergeable && merge != nil {
		def.Mergeable = true
	}
	if len(def.Schema) == 0 {
		def.Schema = json.RawMessage(`true`)
	}
	sch, err := compileSchema("types/"+def.Name, def.Schema)
	if err != nil {
		errs = append(errs, fmt.Errorf("data type %s: %w", def.Name, err))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, builtin := builtinDescriptions[def.Name]; builtin {
		return fmt.Errorf("data type %s is built in and cannot be replaced; register a new name", def.Name)
	}
	r.types[def.Name] = &dataType{def: def, schema: sch, merge: merge}
	return nil
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

// Lookup returns a type's definition.
func (r *DataTypeRegistry) Lookup(name string) (DataTypeDefinition, bool) {
	t, err := r.lookup(name)
	if err != nil {
		return DataTypeDefinition{}, false
	}
	return t.def, true
}

// Names lists the registered type names, sorted.
func (r *DataTypeRegistry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.types))
	for n := range r.types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Mergeable reports whether values of the type can be merged.
func (r *DataTypeRegistry) Mergeable(name string) bool {
	t, err := r.lookup(name)
	return err == nil && t.merge != nil
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

// Merge combines two values of a mergeable type, a before b.
func (r *DataTypeRegistry) Merge(dataType string, a, b json.RawMessage) (json.RawMessage, error) {
	t, err := r.lookup(dataType)
	if err != nil {
		return nil, err
	}
	if t.merge == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotMergeable, dataType)
	}
	for i, v := range []json.RawMessage{a, b} {
		if probs := check(t.schema, v); len(probs) > 0 {
			return nil, fmt.Errorf("merge %s, operand %d: %w", dataType, i+1, &ValueError{DataType: dataType, Problems: probs})
		}
	}
	return t.merge(a, b)
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

func mergeFileIDs(a, b json.RawMessage) (json.RawMessage, error) {
	var fa, fb FileCollection
	if err := json.Unmarshal(a, &fa); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &fb); err != nil {
		return nil, err
	}
	m, err := Merge(fa, fb)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func mergeCategorization(a, b json.RawMessage) (json.RawMessage, error) {
	var ca, cb Categorization
	if err := json.Unmarshal(a, &ca); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &cb); err != nil {
		return nil, err
	}
	out := Categorization{Categories: map[string][]string{}, Method: ca.Method}
	if cb.Method != ca.Method {
		out.Method = strings.Trim(ca.Method+"+"+cb.Method, "+")
	}
	for _, c := range []Categorization{ca, cb} {
		for name, ids := range c.Categories {
			out.Categories[name] = dedup(nil, append(append([]string(nil), out.Categories[name]...), ids...))
		}
	}
	return json.Marshal(out)
}
