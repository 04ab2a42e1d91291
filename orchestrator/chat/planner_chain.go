package chat

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// chain is a plan being built.
type chain struct {
	steps    []PlanStep
	have     map[typeHint]bool
	usedText bool
	affinity int // +1 per step fed by an agent that lists it in can_chain_with, -1 per one that lists others
}

func (c *chain) clone() *chain {
	return &chain{steps: slices.Clone(c.steps), have: maps.Clone(c.have), usedText: c.usedText, affinity: c.affinity}
}

func (c *chain) has(name string) bool {
	return slices.ContainsFunc(c.steps, func(s PlanStep) bool { return s.Agent == name })
}

// available reports whether state or an earlier step provides in.
func (c *chain) available(in schemas.TypedInput) bool {
	for k := range c.have {
		if k.dataType != in.DataType {
			continue
		}
		if in.ContentTypeHint == "" || in.ContentTypeHint == schemas.ContentMixed || k.hint == in.ContentTypeHint || k.hint == "" {
			return true
		}
	}
	return false
}

// feed appends to c the steps that give d its inputs, then d itself.
func (p *planner) feed(c *chain, d *agentDoc, reason string, visiting map[string]bool, depth int) error {
	visiting[d.c.Name] = true
	defer delete(visiting, d.c.Name)
	params := map[string]any{}
	for _, in := range d.c.Inputs {
		if in.DataType == schemas.TypeText && p.text != "" && !c.usedText && !p.namesContentOf(d) {
			params[in.Name] = p.text
			c.usedText = true
			continue
		}
		if c.available(in) {
			continue
		}
		named := in.ContentTypeHint != "" && p.req.contents[in.ContentTypeHint]
		if !in.Required && !named {
			continue
		}
		prod, err := p.choose(c, in, d, visiting)
		if err == nil && depth >= maxDepth {
			err = fmt.Errorf("%w: %s needs %s (input %q) and the chain of agents that would produce it is longer than %d", ErrNoPlan, d.c.Name, typeName(in), in.Name, maxDepth)
		}
		if err == nil {
			before := c.clone()
			why := fmt.Sprintf("feeds %s to %s", typeName(in), d.c.Name)
			if asked := p.asked(prod); asked != "" {
				why = "asked: " + asked
			}
			if err = p.feed(c, prod, why, visiting, depth+1); err == nil {
				if len(prod.c.CanChainWith) > 0 {
					if slices.Contains(prod.c.CanChainWith, d.c.Name) {
						c.affinity++
					} else {
						c.affinity--
					}
				}
			} else {
				*c = *before
			}
		}
		if err != nil && in.Required {
			return err
		}
	}
	if c.has(d.c.Name) {
		return nil // fed an earlier input already
	}
	p.fill(d, params)
	c.steps = append(c.steps, PlanStep{Agent: d.c.Name, Params: params, Reason: reason})
	for _, o := range d.c.Outputs {
		c.have[typeHint{o.DataType, o.ContentTypeHint}] = true
	}
	return nil
}

// namesContentOf reports whether the message names the content type of one
// of d's file inputs: then the message's words are not its text ("count
// the words of the budget documents").
func (p *planner) namesContentOf(d *agentDoc) bool {
	for _, in := range d.c.Inputs {
		if in.ContentTypeHint != "" && p.req.contents[in.ContentTypeHint] {
			return true
		}
	}
	return false
}

// choose picks the agent that produces in for consumer (nil for the
// message itself). One producer is taken as it is; among several, the
// ones related to the message or chained to the consumer rank first, and
// when none is, the plan fails rather than guess.
func (p *planner) choose(c *chain, in schemas.TypedInput, consumer *agentDoc, visiting map[string]bool) (*agentDoc, error) {
	var prods []*agentDoc
	for _, o := range p.ix.docs {
		if visiting[o.c.Name] || c.has(o.c.Name) || !p.compatible(o) || !produces(o.c, in) {
			continue
		}
		prods = append(prods, o)
	}
	who := "the message"
	if consumer != nil {
		who = consumer.c.Name
	}
	if len(prods) == 0 {
		return nil, fmt.Errorf("%w: %s needs %s (input %q)%s, the conversation's state holds none and no live agent produces it; %s",
			ErrNoPlan, who, typeName(in), in.Name, p.textHint(in), p.startHint(in))
	}
	if len(prods) == 1 && in.DataType != schemas.TypeText {
		return prods[0], nil // the only way to it
	}
	rank := func(o *agentDoc) (int, float64) {
		aff := 0
		if consumer != nil && slices.Contains(o.c.CanChainWith, consumer.c.Name) {
			aff = 1
		}
		return aff, p.ix.score(o, p.req.stems)
	}
	best := slices.MaxFunc(prods, func(a, b *agentDoc) int {
		aa, as := rank(a)
		ba, bs := rank(b)
		return cmp.Or(cmp.Compare(aa, ba), cmp.Compare(as, bs), strings.Compare(b.c.Name, a.c.Name))
	})
	if aff, score := rank(best); aff == 0 && score == 0 && len(prods) == 1 {
		return nil, fmt.Errorf("%w: %s needs %s (input %q)%s; the conversation's state holds none, and the message does not ask for %s, the one agent that produces it",
			ErrNoPlan, who, typeName(in), in.Name, p.textHint(in), best.c.Name)
	} else if aff == 0 && score == 0 {
		names := make([]string, len(prods))
		for i, o := range prods {
			names[i] = o.c.Name
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w: %s needs %s (input %q)%s and the conversation's state holds none; %s could produce it, and the message does not say which",
			ErrNoPlan, who, typeName(in), in.Name, p.textHint(in), strings.Join(names, ", "))
	}
	return best, nil
}

func (p *planner) textHint(in schemas.TypedInput) string {
	if in.DataType == schemas.TypeText {
		return ": give the text in quotes (\"reverse the text 'hello world'\")"
	}
	return ""
}

func (p *planner) startHint(in schemas.TypedInput) string {
	return fmt.Sprintf("start an agent whose contract outputs %s, or configure an LLM (docs/llm.md)", typeName(in))
}

func typeName(in schemas.TypedInput) string {
	return in.DataType + route.HintSuffix(in.ContentTypeHint)
}

// produces reports whether c has an output that can feed in.
func produces(c schemas.AgentContract, in schemas.TypedInput) bool {
	for _, o := range c.Outputs {
		if o.DataType != in.DataType {
			continue
		}
		if in.ContentTypeHint == "" || in.ContentTypeHint == schemas.ContentMixed || o.ContentTypeHint == "" || o.ContentTypeHint == in.ContentTypeHint {
			return true
		}
	}
	return false
}
