package route

import (
	"errors"
	"fmt"

	"github.com/agentmesh/agentmesh/schemas"
)

// InputBuilder builds the typed inputs of a task for a chosen agent from
// state slots: each TypedInput of the contract is filled from the slot its
// (data type, content type hint) routes to. An input without a hint (or
// with hint mixed) of a type whose slots differ by hint (FILE_IDS: images,
// documents, links) falls back to the newest slot holding that type.
type InputBuilder struct {
	router *Router
}

// NewInputBuilder returns a builder that finds slots with router.
func NewInputBuilder(router *Router) *InputBuilder { return &InputBuilder{router: router} }

// Build returns the inputs of contract filled from slots, keyed by input
// name. Optional inputs with nothing to fill them are left out; every
// required input with nothing to fill it is reported at once, wrapping
// ErrMissingInput.
func (b *InputBuilder) Build(contract schemas.AgentContract, slots map[string]schemas.TypedValue) (map[string]schemas.TypedValue, error) {
	out := make(map[string]schemas.TypedValue, len(contract.Inputs))
	var errs []error
	if err := b.router.Declare(contract); err != nil {
		errs = append(errs, fmt.Errorf("agent %s: %w", contract.Name, err))
	}
	for _, in := range contract.Inputs {
		v, slot, ok := b.Lookup(in, slots)
		if ok {
			out[in.Name] = v
			continue
		}
		if in.Required {
			errs = append(errs, fmt.Errorf("%w: agent %s input %q (%s%s) reads slot %s, which is empty; run an agent that produces %s first",
				ErrMissingInput, contract.Name, in.Name, in.DataType, HintSuffix(in.ContentTypeHint), SlotName(slot), in.DataType))
		}
	}
	return out, errors.Join(errs...)
}

// Lookup returns the slot value for one input and the slot it looked in.
func (b *InputBuilder) Lookup(in schemas.TypedInput, slots map[string]schemas.TypedValue) (schemas.TypedValue, string, bool) {
	slot, routed := b.router.SlotFor(in.DataType, in.ContentTypeHint)
	if routed {
		if v, ok := slots[slot]; ok && v.DataType == in.DataType {
			return v, slot, true
		}
	}
	if (in.ContentTypeHint == "" || in.ContentTypeHint == schemas.ContentMixed) && b.slotsByHint(in.DataType) {
		var (
			best     schemas.TypedValue
			bestName string
		)
		for name, v := range slots {
			if v.DataType != in.DataType {
				continue
			}
			if bestName == "" || v.ProducedAt.After(best.ProducedAt) || (v.ProducedAt.Equal(best.ProducedAt) && name < bestName) {
				best, bestName = v, name
			}
		}
		if bestName != "" {
			return best, bestName, true
		}
	}
	return schemas.TypedValue{}, slot, false
}

// slotsByHint reports whether dataType's descriptor names slots by hint.
func (b *InputBuilder) slotsByHint(dataType string) bool {
	t, ok := b.router.reg.Type(dataType)
	return ok && len(t.Slots) > 1
}

// HintSuffix is ", <hint>" for a content hint, "" for none: for messages
// that name a data type.
func HintSuffix(h string) string {
	if h == "" {
		return ""
	}
	return ", " + h
}

// SlotName names slot s in a message, saying when there is none.
func SlotName(s string) string {
	if s == "" {
		return "(none: this type is kept in history only)"
	}
	return s
}

// Feeds reports whether an output with dataType and hint can fill input
// in: the types are equal and in takes any hint (none, or mixed) or this
// one.
func Feeds(dataType, hint string, in schemas.TypedInput) bool {
	if dataType != in.DataType {
		return false
	}
	if in.ContentTypeHint == "" || in.ContentTypeHint == schemas.ContentMixed {
		return true
	}
	return hint == in.ContentTypeHint
}
