package schemas

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Slot is one named, typed value in an ExecutionContext, with its provenance.
type Slot struct {
	Name string `json:"name"`
	TypedValue
}

// ExecutionContext holds the named typed slots an agent reads and writes,
// plus the task's parameters and instruction. Every slot remembers its data
// type and who wrote it. It is safe for concurrent use and serialises to JSON
// (a checkpoint) and back.
type ExecutionContext struct {
	mu          sync.RWMutex
	slots       map[string]TypedValue
	params      map[string]any
	instruction string
	registry    *DataTypeRegistry
	caller      Caller // agent-to-agent calls (call.go); set by the runtime
}

// NewExecutionContext returns an empty context validating against reg (the
// default registry when nil).
func NewExecutionContext(reg *DataTypeRegistry) *ExecutionContext {
	if reg == nil {
		reg = DefaultRegistry()
	}
	return &ExecutionContext{slots: map[string]TypedValue{}, registry: reg}
}

// ContextFromTask builds the context an agent sees for a task: one slot per input.
func ContextFromTask(reg *DataTypeRegistry, t TaskRequest) *ExecutionContext {
	c := NewExecutionContext(reg)
	for name, v := range t.Inputs {
		c.slots[name] = v
	}
	c.params = t.Params
	c.instruction = t.Instruction
	return c
}

// Write stores value under name as dataType, validated against the type's
// schema. A FileCollection value sets the content type hint.
func (c *ExecutionContext) Write(name string, value any, dataType, source string) error {
	tv, err := NewValue(dataType, value, source)
	if err != nil {
		return err
	}
	return c.Put(name, tv)
}

// Put stores a TypedValue under name after validating it.
func (c *ExecutionContext) Put(name string, v TypedValue) error {
	if name == "" {
		return fmt.Errorf("execution context: slot name is empty")
	}
	if err := c.registry.ValidateValue(v.Source, name, v); err != nil {
		return err
	}
	if v.ProducedAt.IsZero() {
		v.ProducedAt = time.Now().UTC()
	}
	c.mu.Lock()
	c.slots[name] = v
	c.mu.Unlock()
	return nil
}

// Read returns the slot called name, which must hold expectedType (any type
// when expectedType is ""). Missing slots wrap ErrSlotNotFound; a different
// type wraps ErrTypeMismatch.
func (c *ExecutionContext) Read(name, expectedType string) (TypedValue, error) {
	c.mu.RLock()
	v, ok := c.slots[name]
	c.mu.RUnlock()
	if !ok {
		return TypedValue{}, fmt.Errorf("%w: %q (have %v)", ErrSlotNotFound, name, c.names())
	}
	if expectedType != "" && v.DataType != expectedType {
		return TypedValue{}, fmt.Errorf("%w: slot %q holds %s, not %s", ErrTypeMismatch, name, v.DataType, expectedType)
	}
	return v, nil
}

// Files reads a FILE_IDS slot as a FileCollection.
func (c *ExecutionContext) Files(name string) (FileCollection, error) {
	v, err := c.Read(name, TypeFileIDs)
	if err != nil {
		return FileCollection{}, err
	}
	return v.Files()
}

// Text reads a TEXT slot.
func (c *ExecutionContext) Text(name string) (string, error) {
	v, err := c.Read(name, TypeText)
	if err != nil {
		return "", err
	}
	return v.Text()
}

// Has reports whether a slot called name exists.
func (c *ExecutionContext) Has(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.slots[name]
	return ok
}

// Delete removes a slot.
func (c *ExecutionContext) Delete(name string) {
	c.mu.Lock()
	delete(c.slots, name)
	c.mu.Unlock()
}

// Slots lists every slot, sorted by name.
func (c *ExecutionContext) Slots() []Slot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Slot, 0, len(c.slots))
	for n, v := range c.slots {
		out = append(out, Slot{Name: n, TypedValue: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (c *ExecutionContext) names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.slots))
	for n := range c.slots {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Params returns the task's free parameters.
func (c *ExecutionContext) Params() map[string]any {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.params
}

// Param returns a parameter as a string ("" when absent).
func (c *ExecutionContext) Param(name string) string {
	v, ok := c.Params()[name]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// SetParams replaces the parameters.
func (c *ExecutionContext) SetParams(p map[string]any) {
	c.mu.Lock()
	c.params = p
	c.mu.Unlock()
}

// Instruction is the task's natural-language instruction, if any.
func (c *ExecutionContext) Instruction() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.instruction
}

type contextJSON struct {
	Slots       []Slot         `json:"slots"`
	Params      map[string]any `json:"params,omitempty"`
	Instruction string         `json:"instruction,omitempty"`
}

// MarshalJSON writes a checkpoint: slots sorted by name, params, instruction.
func (c *ExecutionContext) MarshalJSON() ([]byte, error) {
	slots := c.Slots()
	c.mu.RLock()
	defer c.mu.RUnlock()
	return json.Marshal(contextJSON{Slots: slots, Params: c.params, Instruction: c.instruction})
}

// UnmarshalJSON restores a checkpoint, validating every slot. A context
// restored this way uses the default registry unless it already had one.
func (c *ExecutionContext) UnmarshalJSON(b []byte) error {
	var w contextJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("execution context: %w", err)
	}
	reg := c.registry
	if reg == nil {
		reg = DefaultRegistry()
	}
	slots := make(map[string]TypedValue, len(w.Slots))
	for _, s := range w.Slots {
		if s.Name == "" {
			return fmt.Errorf("execution context: a slot has no name")
		}
		if err := reg.ValidateValue(s.Source, s.Name, s.TypedValue); err != nil {
			return fmt.Errorf("execution context: %w", err)
		}
		slots[s.Name] = s.TypedValue
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slots, c.params, c.instruction, c.registry = slots, w.Params, w.Instruction, reg
	return nil
}
