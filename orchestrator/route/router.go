package route

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// Slots of the built-in data types (their descriptors in schemas name
// them; the constants are for code that reads a slot by name).
const (
	SlotImageIDs       = "current_image_ids"
	SlotDocumentIDs    = "current_document_ids"
	SlotLinkIDs        = "current_link_ids"
	SlotFileIDs        = "current_file_ids"
	SlotCategorization = "current_categorization"
	SlotAnalysis       = "current_analysis"
	SlotText           = "current_text"
	SlotCrossRef       = "current_cross_ref"
)

// ValueResolver loads spilled collections and spills large ones
// (resolvers.Collections implements it); it is the one schemas.ValueResolver.
type ValueResolver = schemas.ValueResolver

type routeKey struct{ dataType, hint string }

// Router routes the typed outputs of agent results into state slots by
// (data type, content type hint): each data type's descriptor in the
// registry names its slots, and RegisterSlot adds a route of this router's
// own. It learns the data types an agent declares in its contract
// (Declare), merges into an existing slot only where the output is
// declared mergeable and its type has a merge, and it is idempotent by
// task id.
//
// A Router is safe for concurrent use.
type Router struct {
	mu       sync.RWMutex
	routes   map[routeKey]string // RegisterSlot's routes, over the descriptors'
	declared map[string]declaration
	reg      *schemas.DataTypeRegistry
	values   ValueResolver
	now      func() time.Time
}

// declaration remembers the data types one agent's contract declared and
// what declaring them said.
type declaration struct {
	defs []schemas.DataTypeDefinition
	err  error
}

// RouterOption configures a Router.
type RouterOption func(*Router)

// WithDataTypes sets the data type registry used to validate, merge and
// slot values (default: a registry of its own with the built-in types, so
// the types agents declare stay with the router that learnt them).
func WithDataTypes(reg *schemas.DataTypeRegistry) RouterOption {
	return func(r *Router) { r.reg = reg }
}

// WithValueResolver lets the router merge spilled collections (it resolves
// them first and spills the merge again when it is large).
func WithValueResolver(v ValueResolver) RouterOption {
	return func(r *Router) { r.values = v }
}

// NewRouter returns a router that routes by the data types' descriptors.
// Options: WithDataTypes, WithValueResolver.
func NewRouter(opts ...RouterOption) *Router {
	r := &Router{routes: map[routeKey]string{}, declared: map[string]declaration{}, now: func() time.Time { return time.Now().UTC() }}
	for _, o := range opts {
		o(r)
	}
	if r.reg == nil {
		r.reg = schemas.NewRegistry()
	}
	return r
}

// DataTypes returns the registry the router validates, merges and slots
// with.
func (r *Router) DataTypes() *schemas.DataTypeRegistry { return r.reg }

// Declare learns the data types contract declares (its data_types) into
// the router's registry, once per contract; every part of the orchestrator
// that reads a contract calls it before it reads the contract's types. The
// error names each refused declaration; the types it refused stay unknown,
// so values of them are not routed and the history says why.
func (r *Router) Declare(contract schemas.AgentContract) error {
	if len(contract.DataTypes) == 0 {
		return nil
	}
	r.mu.RLock()
	d, seen := r.declared[contract.Name]
	r.mu.RUnlock()
	if seen && sameBacking(d.defs, contract.DataTypes) {
		return d.err
	}
	var errs []error
	for _, def := range contract.DataTypes {
		if err := r.reg.Declare(def, contract.Name); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrDeclaration, err)
	}
	r.mu.Lock()
	r.declared[contract.Name] = declaration{defs: contract.DataTypes, err: err}
	r.mu.Unlock()
	return err
}

// sameBacking reports whether a and b are the same slice (the registry
// hands out one contract value per announcement, so a new announcement is
// a new slice).
func sameBacking(a, b []schemas.DataTypeDefinition) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// RegisterSlot routes values of dataType (with content hint, or any hint
// when hint is "") into slot, over what the type's descriptor says. An
// empty slot keeps such values in history only.
func (r *Router) RegisterSlot(dataType, hint, slot string) error {
	if dataType == "" {
		return fmt.Errorf("register slot %q: data type is empty", slot)
	}
	if _, ok := r.reg.Lookup(dataType); !ok {
		return fmt.Errorf("register slot %q: %w: %q; register the type in the data type registry first", slot, schemas.ErrUnknownDataType, dataType)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.routes[routeKey{dataType, hint}] = slot
	return nil
}

// SlotFor returns the slot values of dataType with hint go to: a route of
// this router's for the hint, else the descriptor's slot for the hint,
// else a route of this router's for any hint, else the descriptor's slot
// for any hint. ok is false when such values have no slot and are kept in
// history only.
func (r *Router) SlotFor(dataType, hint string) (slot string, ok bool) {
	r.mu.RLock()
	s, found := r.routes[routeKey{dataType, hint}]
	if !found && hint != "" {
		if t, known := r.reg.Type(dataType); known {
			s, found = t.Slots[hint]
		}
	}
	if !found {
		s, found = r.routes[routeKey{dataType, ""}]
	}
	r.mu.RUnlock()
	if found {
		return s, s != ""
	}
	return r.reg.SlotFor(dataType, hint)
}

// Apply routes the outputs of result (the result of taskID, produced by the
// agent with contract) into st: each output whose type has a slot replaces
// that slot, or merges into it when the output is declared mergeable; the
// others (FOLDER_RESULT, unknown types) are kept in a history entry. A task
// already applied changes nothing: Apply reports whether st changed.
// A failed result only adds history. An output that fails its type's schema
// is not routed; the history entry says why. The error reports a merge of a
// spilled collection that could not be resolved.
func (r *Router) Apply(ctx context.Context, st *schemas.ConversationState, contract schemas.AgentContract, taskID string, res schemas.AgentResult) (bool, error) {
	if taskID != "" && st.Applied(taskID) {
		return false, nil
	}
	declErr := r.Declare(contract)
	if st.Slots == nil {
		st.Slots = map[string]schemas.TypedValue{}
	}
	now := r.now()
	agent := res.Agent
	if agent == "" {
		agent = contract.Name
	}
	entry := schemas.HistoryEntry{At: now, Kind: "result", Agent: agent, TaskID: taskID, Text: res.Summary}
	if !res.Success {
		entry.Text = "failed: " + res.Err().Error()
	}
	var notes []string
	if declErr != nil {
		notes = append(notes, declErr.Error())
	}
	if res.Success {
		names := make([]string, 0, len(res.Outputs))
		for n := range res.Outputs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, name := range names {
			tv := res.Outputs[name]
			if tv.Source == "" {
				tv.Source = agent
			}
			if tv.ProducedAt.IsZero() {
				tv.ProducedAt = now
			}
			decl, declared := contract.Output(name)
			if tv.ContentTypeHint == "" && declared {
				tv.ContentTypeHint = decl.ContentTypeHint
			}
			if err := r.reg.ValidateValue(agent, name, tv); err != nil {
				notes = append(notes, fmt.Sprintf("output %q not routed: %v", name, err))
				continue
			}
			slot, ok := r.SlotFor(tv.DataType, tv.ContentTypeHint)
			if !ok {
				if entry.Outputs == nil {
					entry.Outputs = map[string]schemas.TypedValue{}
				}
				entry.Outputs[name] = tv
				continue
			}
			old, exists := st.Slots[slot]
			if exists && old.DataType == tv.DataType && declared && decl.Mergeable && r.reg.Mergeable(tv.DataType) {
				merged, err := r.merge(ctx, old, tv, agent)
				if err != nil {
					return false, fmt.Errorf("task %s (%s): merging output %q into slot %s: %w", taskID, agent, name, slot, err)
				}
				tv = merged
			}
			st.Slots[slot] = tv
		}
	}
	if len(notes) > 0 {
		entry.Text = strings.TrimSpace(entry.Text + " [" + strings.Join(notes, "; ") + "]")
	}
	st.History = append(st.History, entry)
	if taskID != "" {
		st.AppliedTasks = append(st.AppliedTasks, taskID)
	}
	st.UpdatedAt = now
	return true, nil
}

// Merge merges b into a (a first) for a mergeable type, resolving spilled
// collections first and spilling a large merge again when the router has a
// value resolver.
func (r *Router) Merge(ctx context.Context, a, b schemas.TypedValue, source string) (schemas.TypedValue, error) {
	return r.merge(ctx, a, b, source)
}

func (r *Router) merge(ctx context.Context, a, b schemas.TypedValue, source string) (schemas.TypedValue, error) {
	if r.values != nil {
		var err error
		if a, err = r.values.ResolveValue(ctx, a); err != nil {
			return schemas.TypedValue{}, err
		}
		if b, err = r.values.ResolveValue(ctx, b); err != nil {
			return schemas.TypedValue{}, err
		}
	}
	m, err := r.reg.MergeValues(a, b, source)
	if err != nil {
		return schemas.TypedValue{}, err
	}
	m.ProducedAt = r.now()
	if r.values != nil {
		return r.values.SpillValue(ctx, m)
	}
	return m, nil
}
