package chat

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// The planner ranks agents with BM25F over their contracts: each field of a
// contract is a bag of stems with a weight, summed into one weighted term
// frequency per agent. The fields that say what an agent does or produces
// (its name, its capability, the verb its description starts with, its
// outputs with their data types' descriptions, its params and their enum
// values) are also its "strong" words: a message must share one of them
// with an agent for the agent to be what the message asks for. The rest of
// the description ("sunset, forest, seascape...") only ranks.

// Field weights of BM25F.
const (
	weightName   = 3.0
	weightVerb   = 3.0
	weightCap    = 2.0
	weightEnum   = 2.0
	weightOutput = 1.5
	weightParam  = 1.5
	weightBody   = 1.0
	weightWeak   = 0.5 // inputs, params' descriptions
	bm25K1       = 1.2
	bm25B        = 0.75
)

// agentDoc is one agent's contract as the planner reads it.
type agentDoc struct {
	c        schemas.AgentContract
	tf       map[string]float64 // stem -> weighted frequency
	length   float64
	strong   map[string]bool // stems of what the agent does or produces
	params   []paramInfo
	contents map[string]bool    // content hints of its inputs and outputs
	produced map[string]bool    // content hints of its outputs
	bigrams  map[[2]string]bool // pairs of stems that follow each other in its name or description ("title case")
}

// paramInfo is one property of a contract's params schema.
type paramInfo struct {
	name     string
	typ      string // "string", "integer", "number", "boolean", ""
	enum     []string
	min, max *float64
	words    []string // stems of its name and description
}

// index is the BM25F index of the live agents' contracts.
type index struct {
	docs   []*agentDoc
	df     map[string]int
	avgLen float64
}

func newIndex(contracts []schemas.AgentContract, types *schemas.DataTypeRegistry) *index {
	ix := &index{df: map[string]int{}}
	declared := map[string]string{} // data type -> description, from the contracts themselves
	for _, c := range contracts {
		for _, d := range c.DataTypes {
			declared[d.Name] = d.Description
		}
	}
	typeDesc := func(name string) string {
		if t, ok := types.Type(name); ok {
			return t.Description
		}
		return declared[name]
	}
	total := 0.0
	for _, c := range contracts {
		d := &agentDoc{c: c, tf: map[string]float64{}, strong: map[string]bool{}, contents: map[string]bool{}, produced: map[string]bool{}, bigrams: map[[2]string]bool{}}
		add := func(text string, w float64, strong bool) {
			for _, s := range stems(text) {
				d.tf[s] += w
				d.length += w
				if strong {
					d.strong[s] = true
				}
			}
		}
		add(c.Name, weightName, true)
		add(strings.ReplaceAll(c.Capability, "_", " "), weightCap, true)
		if verb := firstWord(c.Description); verb != "" {
			add(verb, weightVerb, true)
		}
		add(c.Description, weightBody, false)
		for _, text := range []string{c.Name, c.Description} {
			st := stems(text)
			for i := 1; i < len(st); i++ {
				d.bigrams[[2]string{st[i-1], st[i]}] = true
			}
		}
		for _, o := range c.Outputs {
			add(o.Name+" "+o.Description, weightOutput, true)
			add(strings.ReplaceAll(o.DataType, "_", " "), weightOutput, true)
			add(typeDesc(o.DataType), weightWeak, false)
			if o.ContentTypeHint != "" {
				d.contents[o.ContentTypeHint] = true
				d.produced[o.ContentTypeHint] = true
			}
		}
		for _, in := range c.Inputs {
			add(in.Name+" "+in.Description, weightWeak, false)
			if in.ContentTypeHint != "" {
				d.contents[in.ContentTypeHint] = true
			}
		}
		d.params = paramsOf(c)
		for _, p := range d.params {
			add(p.name, weightParam, false)
			for _, e := range p.enum {
				add(e, weightEnum, true)
			}
			for _, s := range p.words {
				d.tf[s] += weightWeak
				d.length += weightWeak
			}
		}
		for s := range d.tf {
			ix.df[s]++
		}
		total += d.length
		ix.docs = append(ix.docs, d)
	}
	if len(ix.docs) > 0 {
		ix.avgLen = total / float64(len(ix.docs))
	}
	return ix
}

// score is the BM25F score of d for the message stems q.
func (ix *index) score(d *agentDoc, q []string) float64 {
	n := float64(len(ix.docs))
	s := 0.0
	for _, t := range q {
		tf := d.tf[t]
		if tf == 0 {
			continue
		}
		df := float64(ix.df[t])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		norm := 1 - bm25B + bm25B*d.length/max(ix.avgLen, 1)
		s += idf * tf * (bm25K1 + 1) / (tf + bm25K1*norm)
	}
	return s
}

func (ix *index) doc(name string) *agentDoc {
	for _, d := range ix.docs {
		if d.c.Name == name {
			return d
		}
	}
	return nil
}

// firstWord is the first word of a description: the verb of "Finds stored
// images ...", "Counts the words ...".
func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// paramsOf reads the properties of c's params schema.
func paramsOf(c schemas.AgentContract) []paramInfo {
	if len(c.Params) == 0 {
		return nil
	}
	var sch struct {
		Properties map[string]struct {
			Type        any      `json:"type"`
			Enum        []any    `json:"enum"`
			Minimum     *float64 `json:"minimum"`
			Maximum     *float64 `json:"maximum"`
			Description string   `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(c.Params, &sch) != nil {
		return nil
	}
	var out []paramInfo
	for name, p := range sch.Properties {
		pi := paramInfo{name: name, min: p.Minimum, max: p.Maximum, words: stems(name + " " + p.Description)}
		if t, ok := p.Type.(string); ok {
			pi.typ = t
		}
		for _, e := range p.Enum {
			if s, ok := e.(string); ok {
				pi.enum = append(pi.enum, s)
			}
		}
		out = append(out, pi)
	}
	// Map order is random: sort so that plans are the same every time.
	slices.SortFunc(out, func(a, b paramInfo) int { return strings.Compare(a.name, b.name) })
	return out
}
