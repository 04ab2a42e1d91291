package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// ContractLookup returns the contract of a live agent, and false when no
// instance of it is live.
type ContractLookup func(agent string) (schemas.AgentContract, bool)

// Seed sources a step input can be mapped to.
const (
	SourceSeedImages    = "seed.images"
	SourceSeedDocuments = "seed.documents"
	SourceSeedLinks     = "seed.links"
	// SourceSeedPrefix starts every seed source; "seed.<name>" reads the
	// seed value called name.
	SourceSeedPrefix = "seed."
	// SourceTextPrefix starts a TEXT literal: an input mapped to
	// "text:hello world" receives the TEXT value "hello world".
	SourceTextPrefix = "text:"
)

// Validate checks spec before anything runs and reports every
// problem at once: the structural checks of spec.Validate, cycles (named),
// agents not live according to lookup, seed values that fail their data
// type's schema, params that fail the agent's params schema or that it does
// not declare, input mappings to sources that do not exist, required inputs that no parent, seed or state slot can fill,
// and fan-in of parallel parents producing the same type into one input
// when the type or the outputs are not mergeable. It returns the contracts
// of the pipeline's agents and its waves. The error wraps
// ErrInvalidPipeline. It checks the default limits (ValidateWithin).
func Validate(spec pipelinespec.PipelineSpec, lookup ContractLookup, router *route.Router) (map[string]schemas.AgentContract, [][]string, error) {
	return ValidateWithin(spec, lookup, router, pipelinespec.Limits{})
}

// ValidateWithin is Validate with limits (zero fields: the defaults): a
// spec over one is refused with errors matching schemas.ErrLimitExceeded
// (code limit_exceeded), and one nested deeper than limits.Depth with that
// problem alone. Its cost is linear in the size of spec: each sub-pipeline
// is looked at once. Its error lists at most maxProblems problems of at
// most maxProblemRunes characters each, however large the spec.
func ValidateWithin(spec pipelinespec.PipelineSpec, lookup ContractLookup, router *route.Router, limits pipelinespec.Limits) (map[string]schemas.AgentContract, [][]string, error) {
	limits = limits.OrDefaults()
	name := spec.Name
	if name == "" {
		name = "(unnamed)"
	}
	var errs []error
	if err := spec.ValidateWithin(limits); err != nil {
		errs = flatten(err, schemas.ErrInvalidPipeline)
		if spec.Depth() > limits.Depth { // nothing else is looked at
			return map[string]schemas.AgentContract{}, nil, fmt.Errorf("%w %q: %w", ErrInvalidPipeline, schemas.Clip(name, 100), bounded(errs))
		}
	}
	contracts, waves, more := validate(spec, lookup, router, limits)
	if errs = append(errs, more...); len(errs) > 0 {
		return contracts, waves, fmt.Errorf("%w %q: %w", ErrInvalidPipeline, schemas.Clip(name, 100), bounded(errs))
	}
	return contracts, waves, nil
}

// Bounds of the error of ValidateWithin.
const (
	maxProblems     = 50
	maxProblemRunes = 2000
)

// bounded joins the first maxProblems of errs, each printed clipped to
// maxProblemRunes characters, and says how many more there were.
func bounded(errs []error) error {
	out := make([]error, 0, min(len(errs), maxProblems)+1)
	for i, e := range errs {
		if i == maxProblems {
			out = append(out, fmt.Errorf("(%d more problems not listed; fix these and validate again)", len(errs)-maxProblems))
			break
		}
		out = append(out, clipped{e})
	}
	return errors.Join(out...)
}

// clipped is an error printed at most maxProblemRunes characters long;
// errors.Is and As see the whole.
type clipped struct{ err error }

func (c clipped) Error() string { return schemas.Clip(c.err.Error(), maxProblemRunes) }
func (c clipped) Unwrap() error { return c.err }

// validate runs the checks of Validate that the structural ones
// (spec.ValidateWithin, which covers the sub-pipelines) leave, on spec:
// those of every step here, each kind's own through its validate (which
// for a step that runs a pipeline checks it once, see checkSub), then the
// inputs.
func validate(spec pipelinespec.PipelineSpec, lookup ContractLookup, router *route.Router, limits pipelinespec.Limits) (map[string]schemas.AgentContract, [][]string, []error) {
	var errs []error
	waves, werr := pipelinespec.Waves(spec)
	if werr != nil {
		errs = append(errs, werr)
	}
	contracts := map[string]schemas.AgentContract{}
	for _, s := range spec.Steps {
		if _, done := contracts[s.Agent]; done || s.Agent == "" {
			continue
		}
		c, ok := lookup(s.Agent)
		if !ok {
			errs = append(errs, fmt.Errorf("step %q: %w %q: no live instance in the registry; start it (agentmesh agent %s) or fix the name",
				s.ID, ErrUnknownAgent, s.Agent, s.Agent))
			contracts[s.Agent] = schemas.AgentContract{} // reported once
			continue
		}
		contracts[s.Agent] = c
		if err := router.Declare(c); err != nil {
			errs = append(errs, fmt.Errorf("step %q (%s): %w", s.ID, s.Agent, err))
		}
	}
	for a, c := range contracts {
		if c.Name == "" {
			delete(contracts, a)
		}
	}
	errs = append(errs, checkSeed(spec.Seed, router)...)
	errs = append(errs, checkConditions(spec)...)
	for _, s := range spec.Steps {
		if c, ok := contracts[s.Agent]; ok {
			if p, err := resolveParams(s.Params, spec.Vars); err == nil {
				s.Params = p // as the agent will get them (checkConditions reports the error)
			}
			errs = append(errs, checkParams(s, c)...)
		}
	}
	c := &checks{spec: spec, view: spec, contracts: contracts, lookup: lookup, router: router, limits: limits}
	for _, s := range spec.Steps {
		if k, err := kindOf(s); err == nil { // an unknown kind: reported by spec.Validate
			errs = append(errs, k.validate(c, s)...)
		}
	}
	if werr == nil {
		errs = append(errs, checkInputs(c.view, waves, contracts, router)...)
	}
	return contracts, waves, errs
}

// checks is what a kind's validate reads: the spec, the contracts of its
// live agents, the lookup, router and limits it is checked with. view is
// the spec as its inputs are checked after the kinds' checks, which a kind
// may rewrite (a for_each maps its item input to its items, itemsView).
type checks struct {
	spec, view pipelinespec.PipelineSpec
	contracts  map[string]schemas.AgentContract
	lookup     ContractLookup
	router     *route.Router
	limits     pipelinespec.Limits
}

// flatten lists the joined errors inside err (as made by
// fmt.Errorf("%w: %w", sentinel, errors.Join(...))), without the sentinel.
func flatten(err error, sentinel error) []error {
	var out []error
	var walk func(e error)
	walk = func(e error) {
		if m, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range m.Unwrap() {
				if x != sentinel {
					walk(x)
				}
			}
			return
		}
		out = append(out, e)
	}
	walk(err)
	return out
}

// graph is the dependency structure of a pipeline that passed Waves. It
// keeps, per step, only what grows with the number of slots, not with the
// run: ancestry is answered by a walk when asked, so a long chain costs
// linear memory.
type graph struct {
	steps map[string]pipelinespec.PipelineStep
	wave  map[string]int
}

func newGraph(spec pipelinespec.PipelineSpec, waves [][]string) graph {
	g := graph{steps: make(map[string]pipelinespec.PipelineStep, len(spec.Steps)), wave: make(map[string]int, len(spec.Steps))}
	for _, s := range spec.Steps {
		if _, dup := g.steps[s.ID]; !dup {
			g.steps[s.ID] = s
		}
	}
	for w, ids := range waves {
		for _, id := range ids {
			g.wave[id] = w
		}
	}
	return g
}

// ancestor reports whether step a runs before step id because id depends
// on it, directly or through other steps. The walk skips steps in waves
// before a's, which cannot lead to it.
func (g graph) ancestor(a, id string) bool {
	wa, ok := g.wave[a]
	if !ok {
		return false
	}
	seen := map[string]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range g.steps[cur].DependsOn {
			if d == a {
				return true
			}
			if w, ok := g.wave[d]; ok && w > wa && !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return false
}

// exclusive reports whether at most one of steps can run in a run: each
// two of them are on different branches of one router (a branch or a step
// after it), so a step after them joins them with no fan-in to merge.
func (g graph) exclusive(steps []string) bool {
	branch := func(r pipelinespec.PipelineStep, id string) int {
		for i, b := range r.Router.Branches {
			if b.Step == id || g.ancestor(b.Step, id) {
				return i
			}
		}
		return -1
	}
	for i, a := range steps {
		for _, b := range steps[i+1:] {
			apart := false
			for _, r := range g.steps {
				if r.Router == nil {
					continue
				}
				if ba, bb := branch(r, a), branch(r, b); ba >= 0 && bb >= 0 && ba != bb {
					apart = true
					break
				}
			}
			if !apart {
				return false
			}
		}
	}
	return true
}

// parallel keeps the feeders that are not an ancestor of another feeder:
// of a chain of producers, only the latest counts.
func (g graph) parallel(feeders []string) []string {
	var out []string
	for _, f := range feeders {
		shadowed := false
		for _, o := range feeders {
			if o != f && g.ancestor(f, o) {
				shadowed = true
				break
			}
		}
		if !shadowed {
			out = append(out, f)
		}
	}
	return out
}

// textLiteral reads a "text:<literal>" input source.
func textLiteral(src string) (string, bool) {
	return strings.CutPrefix(src, SourceTextPrefix)
}

func clipSource(src string) string {
	if len(src) > 40 {
		src = src[:37] + "..."
	}
	return fmt.Sprintf("%q", src)
}

// It is long because it walks the waves once with the slots each step
// inherits; the walk and its checks share that running state.
func checkInputs(spec pipelinespec.PipelineSpec, waves [][]string, contracts map[string]schemas.AgentContract, router *route.Router) []error {
	g := newGraph(spec, waves)
	builder := route.NewInputBuilder(router)
	reg := router.DataTypes()
	seed := seedSlots(spec.Seed, router)
	// routed[id]: the slots the outputs of id and of its ancestors fill,
	// built wave by wave from the parents'.
	routed := make(map[string]map[string]schemas.TypedValue, len(g.steps))
	var errs []error
	for _, wave := range waves {
		for _, id := range wave {
			step := g.steps[id]
			// The slots a run can hold when this step starts: the seed and
			// whatever its ancestors' outputs are routed to.
			up := map[string]schemas.TypedValue{}
			for _, p := range step.DependsOn {
				maps.Copy(up, routed[p])
			}
			avail := maps.Clone(seed)
			maps.Copy(avail, up)
			sc, _ := stepContract(contracts, step)
			for _, o := range sc.Outputs {
				if slot, ok := router.SlotFor(o.DataType, o.ContentTypeHint); ok {
					up[slot] = schemas.TypedValue{DataType: o.DataType, ContentTypeHint: o.ContentTypeHint}
				}
			}
			routed[id] = up
			c, ok := contracts[step.Agent]
			if !ok {
				continue // unknown agent, already reported
			}
			where := fmt.Sprintf("step %q (%s)", id, step.Agent)
			mapped := slices.Sorted(maps.Keys(step.Inputs))
			for _, name := range mapped {
				if err := checkSource(spec, g, contracts, avail, id, c, name, step.Inputs[name]); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", where, err))
				}
			}
			for _, in := range c.Inputs {
				if _, ok := step.Inputs[in.Name]; ok {
					continue
				}
				var feeders []string
				outs := map[string]schemas.TypedOutput{}
				for _, p := range step.DependsOn {
					pc, ok := stepContract(contracts, g.steps[p])
					if !ok {
						continue
					}
					for _, o := range pc.Outputs {
						if route.Feeds(o.DataType, o.ContentTypeHint, in) {
							if !slices.Contains(feeders, p) {
								feeders = append(feeders, p)
							}
							if prev, seen := outs[p]; !seen || !prev.Mergeable {
								outs[p] = o
							}
						}
					}
				}
				if par := g.parallel(feeders); len(par) > 1 && !g.exclusive(par) {
					mergeable := reg.Mergeable(in.DataType)
					var unmerge []string
					for _, p := range par {
						if !outs[p].Mergeable {
							unmerge = append(unmerge, fmt.Sprintf("%s.%s", p, outs[p].Name))
						}
					}
					if !mergeable || len(unmerge) > 0 {
						why := fmt.Sprintf("data type %s is not mergeable", in.DataType)
						if mergeable {
							why = fmt.Sprintf("output %s is not declared mergeable", strings.Join(unmerge, ", "))
						}
						errs = append(errs, fmt.Errorf("%s: %w: parallel parents %s all produce %s%s for input %q and %s; map the input to one of them (inputs: {%s: %s.%s}) or make the outputs mergeable",
							where, ErrFanIn, quoteList(par), in.DataType, route.HintSuffix(in.ContentTypeHint), in.Name, why, in.Name, par[0], outs[par[0]].Name))
					}
				}
				if len(feeders) > 0 {
					continue
				}
				if _, slot, ok := builder.Lookup(in, avail); !ok && in.Required {
					errs = append(errs, fmt.Errorf("%s: %w: input %q (%s%s) is required, but no parent produces it, the seed does not hold it and no earlier step fills slot %s; add a step that produces %s, a seed, or map it with inputs",
						where, route.ErrMissingInput, in.Name, in.DataType, route.HintSuffix(in.ContentTypeHint), route.SlotName(slot), in.DataType))
				}
			}
		}
	}
	return errs
}

func checkSource(spec pipelinespec.PipelineSpec, g graph, contracts map[string]schemas.AgentContract, avail map[string]schemas.TypedValue,
	id string, c schemas.AgentContract, name, src string) error {
	in, ok := c.Input(name)
	if !ok {
		var names []string
		for _, i := range c.Inputs {
			names = append(names, i.Name)
		}
		return fmt.Errorf("%w: inputs maps %q, which is not an input of agent %s (its inputs: %s)", ErrBadInputSource, name, c.Name, orNone(names))
	}
	if _, ok := textLiteral(src); ok {
		if in.DataType != schemas.TypeText {
			return fmt.Errorf("%w: input %q is %s but %s is a TEXT literal", ErrBadInputSource, name, in.DataType, clipSource(src))
		}
		return nil
	}
	head, tail, ok := strings.Cut(src, ".")
	if !ok || head == "" || tail == "" {
		return fmt.Errorf("%w: input %q maps to %q; use seed.images, seed.documents, seed.links, seed.<name>, <step>.<output>, state.<slot> or text:<literal text>", ErrBadInputSource, name, src)
	}
	if head == "seed" {
		return checkSeedSource(spec.Seed, in, name, src, tail)
	}
	if head == "state" {
		v, ok := avail[tail]
		if !ok {
			return fmt.Errorf("%w: input %q maps to %s, but neither the seed nor any ancestor of the step fills slot %q", ErrBadInputSource, name, src, tail)
		}
		if v.DataType != in.DataType {
			return fmt.Errorf("%w: input %q is %s but slot %q holds %s", ErrBadInputSource, name, in.DataType, tail, v.DataType)
		}
		return nil
	}
	parent, ok := g.steps[head]
	if !ok {
		return fmt.Errorf("%w: input %q maps to %s, but there is no step %q", ErrBadInputSource, name, src, head)
	}
	if !g.ancestor(head, id) {
		return fmt.Errorf("%w: input %q maps to %s, but step %q does not run before this step; add it to depends_on", ErrBadInputSource, name, src, head)
	}
	pc, ok := stepContract(contracts, parent)
	if !ok {
		return nil // unknown agent, already reported
	}
	o, ok := pc.Output(tail)
	if !ok {
		var names []string
		for _, x := range pc.Outputs {
			names = append(names, x.Name)
		}
		return fmt.Errorf("%w: input %q maps to %s, but agent %s has no output %q (its outputs: %s)", ErrBadInputSource, name, src, parent.Agent, tail, orNone(names))
	}
	if o.DataType != in.DataType {
		return fmt.Errorf("%w: input %q is %s but %s is %s", ErrBadInputSource, name, in.DataType, src, o.DataType)
	}
	return nil
}

func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	if len(q) == 2 {
		return q[0] + " and " + q[1]
	}
	return strings.Join(q, ", ")
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
