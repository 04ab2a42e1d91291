package chat

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// ErrNoPlan reports a message the offline planner cannot turn into a chain
// of live agents; the error says what is missing.
var ErrNoPlan = errors.New("I can't plan this without a model")

// Plan is the offline planner's chain of agent calls, in order.
type Plan struct {
	Steps []PlanStep
	Query string // the search query taken from the message, if a step got it
	Text  string // the text taken from the message, if a step got it
}

// PlanStep is one agent call of a plan.
type PlanStep struct {
	Agent  string
	Params map[string]any
	Reason string // why the step is there: "asked: organize, folders" or "feeds CATEGORIZATION to FolderAgent"
}

// Agents lists the plan's agents in order.
func (p Plan) Agents() []string {
	out := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = s.Agent
	}
	return out
}

// maxGoals is how many separate requests one message may hold ("find the
// sunsets and summarize the documents" holds two).
const maxGoals = 3

// maxDepth is the longest chain of producers fed to one agent.
const maxDepth = 4

// PlanOffline plans message from the live agents' contracts, without an LLM.
//
// It finds what the message asks for: the agents whose contract shares a
// word with the message in what the agent does or produces (its name,
// capability, the verb of its description, its outputs and their data
// types' descriptions, its params and their enum values), ranked by BM25
// over the whole contract ("sunset" ranks the image search above the
// documents search). When the message names no such word but names a
// content type ("the sunset photos"), what it asks for is that content.
//
// Each goal is then fed backwards from its contract: a required input
// comes from the conversation's state (slots), an earlier step, the text
// the message carries (a TEXT input: "reverse the text hello world"), or
// an agent that produces it, itself fed the same way. An optional input is
// fed when the message names its content type ("count the words of the
// documents"). Among several producers, the one the consumer's producer
// may chain with (can_chain_with), then the best ranked, wins; when none
// of them relates to the message the plan fails rather than guess. The
// goal whose chain covers most of the message's asking words wins; the
// words left over may make a further goal.
//
// Params are filled from the message: the search terms into a "query"
// param, the enum value the message names ("reverse" -> op=reverse,
// "count the words" -> op=wordcount), a number next to a word of an
// integer param's name or description ("3 sunset images" -> limit=3).
//
// A message it cannot plan gets an error wrapping ErrNoPlan that names
// what is missing: the words no agent offers, the capability no live agent
// has, or the input no live agent produces.
func PlanOffline(message string, contracts []schemas.AgentContract, slots map[string]schemas.TypedValue, router *route.Router) (Plan, error) {
	if router == nil {
		router = route.NewRouter()
	}
	p := &planner{req: parseRequest(message), ix: newIndex(contracts, router.DataTypes()), matches: map[string]match{}}
	p.have = map[typeHint]bool{}
	for _, v := range slots {
		p.have[typeHint{v.DataType, v.ContentTypeHint}] = true
	}
	for _, d := range p.ix.docs {
		if m := p.match(d); len(m.words) > 0 {
			p.matches[d.c.Name] = m
		}
	}
	anchors := map[int]bool{}
	for _, m := range p.matches {
		for i := range m.words {
			anchors[i] = true
		}
	}
	for i := range p.req.isCont {
		anchors[i] = true
	}
	// "title case": a word that follows an asking word in an agent's own
	// description asks too.
	for name, m := range p.matches {
		d := p.ix.doc(name)
		for i := range m.words {
			for j := i + 1; j < len(p.req.words) && d.bigrams[[2]string{lastStem(p.req.words[j-1]), p.req.words[j].stems[0]}]; j++ {
				anchors[j] = true
			}
		}
	}
	for i := range p.req.numbers {
		anchors[i] = true
	}
	// Words of a live agent's param names set params ("require
	// approval"); they are not search terms.
	for i, w := range p.req.words {
		for _, d := range p.ix.docs {
			for _, prm := range d.params {
				if slices.ContainsFunc(w.stems, func(s string) bool { return slices.Contains(stems(prm.name), s) }) {
					anchors[i] = true
				}
			}
		}
	}
	p.text = p.req.text(anchors)
	p.query = p.req.query(anchors)
	return p.plan()
}

// typeHint is a (data type, content hint) pair.
type typeHint struct{ dataType, hint string }

// match is what a message asks of one agent: the indexes of the words that
// name what it does or produces, and the enum values they name.
type match struct {
	words map[int]bool
	enums map[string]string // param -> enum value
}

type planner struct {
	req     *request
	ix      *index
	have    map[typeHint]bool // in the conversation's state
	matches map[string]match  // agent -> its match, for agents the message asks for
	text    string            // the text the message carries
	query   string            // the message's search terms
}

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

// match finds the words of the message that name what d does or produces.
func (p *planner) match(d *agentDoc) match {
	m := match{words: map[int]bool{}, enums: map[string]string{}}
	r := p.req
	meaningful := func(i int) bool {
		_, num := r.numbers[i]
		_, cont := r.isCont[i]
		return !r.inQuote[i] && !cont && !num
	}
	for i, ct := range r.isCont {
		if ct != "" && d.produced[ct] && !r.inQuote[i] {
			m.words[i] = true // "the sunset photos" asks for images
		}
	}
	for i, w := range r.words {
		if !meaningful(i) {
			continue
		}
		for j, s := range w.stems {
			if !stopWords[w.parts[j]] && d.strong[s] {
				m.words[i] = true
			}
		}
	}
	for _, prm := range d.params {
		for _, e := range prm.enum {
			if idx := p.namesEnum(e, meaningful); len(idx) > 0 {
				if _, taken := m.enums[prm.name]; !taken {
					m.enums[prm.name] = e
				}
				for _, i := range idx {
					m.words[i] = true
				}
			}
		}
	}
	return m
}

// namesEnum returns the words of the message that name enum value e: the
// word itself ("reverse"), a word it starts ("uppercase", "upper-case" for
// upper), or two words it is made of ("count the words" for wordcount).
func (p *planner) namesEnum(e string, meaningful func(int) bool) []int {
	e = strings.ToLower(e)
	es := stem(e)
	type part struct {
		word       int
		text, stem string
	}
	var ps []part
	for i, w := range p.req.words {
		if !meaningful(i) {
			continue
		}
		for j := range w.parts {
			if !stopWords[w.parts[j]] {
				ps = append(ps, part{i, w.parts[j], w.stems[j]})
			}
		}
	}
	for _, x := range ps {
		if x.stem == es || x.text == e || (len(e) >= 4 && strings.HasPrefix(x.text, e) && len(x.text) > len(e)) {
			return []int{x.word}
		}
	}
	for _, a := range ps {
		for _, b := range ps {
			if a.word != b.word && (a.stem+b.stem == e || a.text+b.text == e || a.stem+b.text == e) {
				return []int{a.word, b.word}
			}
		}
	}
	return nil
}

// compatible reports whether d works on the content type the message
// names: an agent of images is not what "summarize the documents" asks.
func (p *planner) compatible(d *agentDoc) bool {
	if len(p.req.contents) == 0 || len(d.contents) == 0 || d.contents[schemas.ContentMixed] {
		return true
	}
	for ct := range p.req.contents {
		if d.contents[ct] {
			return true
		}
	}
	return false
}

func (p *planner) plan() (Plan, error) {
	if missing := p.missingCapabilities(); len(missing) > 0 {
		return Plan{}, fmt.Errorf("%w: no live agent has capability %s; start one (agentmesh agent NAME) or configure an LLM (docs/llm.md)", ErrNoPlan, strings.Join(missing, ", "))
	}
	if verb, ok := p.unknownVerb(); ok {
		return Plan{}, fmt.Errorf("%w: no live agent's contract speaks of %q, what %q asks to do; say it in words of an agent's description (agentmesh agents lists them), or configure an LLM (docs/llm.md)", ErrNoPlan, verb, p.req.raw)
	}
	for ct := range p.req.contents {
		if !slices.ContainsFunc(p.ix.docs, func(d *agentDoc) bool { return d.contents[ct] }) {
			return Plan{}, fmt.Errorf("%w: no live agent reads or produces %s (%s); start one that does, or configure an LLM (docs/llm.md)", ErrNoPlan, ct, typeName(schemas.TypedInput{DataType: schemas.TypeFileIDs, ContentTypeHint: ct}))
		}
	}
	var goals []*agentDoc
	for _, d := range p.ix.docs {
		if _, ok := p.matches[d.c.Name]; ok && p.compatible(d) {
			goals = append(goals, d)
		}
	}
	c := &chain{have: maps.Clone(p.have)}
	covered := map[int]bool{}
	var firstErr error
	failScore := -1.0
	for range maxGoals {
		var best *chain
		var bestKey [4]float64
		var bestName string
		for _, g := range goals {
			if c.has(g.c.Name) || !p.adds(g, covered) {
				continue
			}
			next := c.clone()
			if err := p.feed(next, g, "asked: "+p.asked(g), map[string]bool{}, 0); err != nil {
				if sc := p.ix.score(g, p.req.stems); sc > failScore { // the best ranked goal's reason
					firstErr, failScore = err, sc
				}
				continue
			}
			key := [4]float64{float64(p.newlyCovered(next.steps, covered)), -float64(len(next.steps) - len(c.steps)), float64(next.affinity - c.affinity), p.ix.score(g, p.req.stems)}
			if best == nil || slices.Compare(key[:], bestKey[:]) > 0 || (slices.Compare(key[:], bestKey[:]) == 0 && g.c.Name < bestName) {
				best, bestKey, bestName = next, key, g.c.Name
			}
		}
		if best == nil {
			break
		}
		c = best
		for _, s := range c.steps {
			p.cover(p.ix.doc(s.Agent), covered)
		}
	}
	if len(c.steps) == 0 {
		if firstErr != nil {
			return Plan{}, firstErr
		}
		return Plan{}, p.unknown()
	}
	plan := Plan{Steps: c.steps}
	for _, s := range c.steps {
		for k, v := range s.Params {
			if v == p.query && p.query != "" && isQueryParam(k) {
				plan.Query = p.query
			}
		}
	}
	if c.usedText {
		plan.Text = p.text
	}
	return plan, nil
}

// unknownVerb is the message's first word when it reads as a verb no
// contract speaks of (followed by a determiner: "delete all images", "tag
// the photos") and the message asks for agents only by the content it
// names. Planning it would run a search for what was meant to be done.
func (p *planner) unknownVerb() (string, bool) {
	w := p.req.words
	if len(w) < 2 || len(w[0].parts) != 1 || len(w[1].parts) != 1 || p.req.inQuote[0] {
		return "", false
	}
	first, next := w[0].parts[0], w[1].parts[0]
	if stopWords[first] || connectors[first] || !set("all", "the", "my", "these", "those", "every", "each", "them", "it", "our")[next] {
		return "", false
	}
	if _, cont := p.req.isCont[0]; cont {
		return "", false
	}
	if _, num := p.req.numbers[0]; num {
		return "", false
	}
	if len(p.matches) == 0 {
		return "", false // nothing matches: unknown says which words
	}
	for _, m := range p.matches {
		for i := range m.words {
			if _, cont := p.req.isCont[i]; !cont {
				return "", false // an agent is asked for by what it does: "sort my pictures into folders"
			}
		}
	}
	return strings.ToLower(w[0].text), true
}

// cover marks the words of the message d accounts for: those that ask for
// it, those of the content types it works on, and any other its contract
// speaks of ("the words" in "reverse the words of ..." is the reverse
// tool's, not a word counter's). A further goal must ask for a word left.
func (p *planner) cover(d *agentDoc, covered map[int]bool) {
	for i := range p.matches[d.c.Name].words {
		covered[i] = true
	}
	for i, w := range p.req.words {
		if ct, cont := p.req.isCont[i]; cont {
			if d.contents[ct] {
				covered[i] = true
			}
			continue
		}
		if !p.req.inQuote[i] && slices.ContainsFunc(w.stems, func(s string) bool { return d.tf[s] > 0 }) {
			covered[i] = true
		}
	}
}

// adds reports whether goal g covers a word of the message not covered yet.
func (p *planner) adds(g *agentDoc, covered map[int]bool) bool {
	for i := range p.matches[g.c.Name].words {
		if !covered[i] {
			return true
		}
	}
	return false
}

func (p *planner) newlyCovered(steps []PlanStep, covered map[int]bool) int {
	seen := map[int]bool{}
	for _, s := range steps {
		for i := range p.matches[s.Agent].words {
			if !covered[i] {
				seen[i] = true
			}
		}
	}
	return len(seen)
}

// asked lists the words of the message that ask for d, as written.
func (p *planner) asked(d *agentDoc) string {
	var out []string
	for i, w := range p.req.words {
		if p.matches[d.c.Name].words[i] {
			out = append(out, strings.ToLower(w.text))
		}
	}
	return strings.Join(out, ", ")
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

// unknown is the error for a message no contract answers: the words no
// agent offers and, when it names a capability, that no live agent has it.
func (p *planner) unknown() error {
	var words []string
	for i, w := range p.req.words {
		_, num := p.req.numbers[i]
		if !p.req.inQuote[i] && !num && slices.ContainsFunc(w.parts, func(s string) bool { return !stopWords[s] }) {
			words = append(words, strings.ToLower(w.text))
		}
	}
	if len(words) == 0 {
		return fmt.Errorf("%w: %q asks for nothing a live agent's contract offers; say what to do in words of an agent's description (agentmesh agents lists them) or configure an LLM (docs/llm.md)", ErrNoPlan, p.req.raw)
	}
	return fmt.Errorf("%w: %q asks for nothing a live agent's contract offers (no agent's name, description, outputs or params speak of %s); say what to do in words of an agent's description (agentmesh agents lists them), or configure an LLM with OPENAI_API_KEY (or AGENTMESH_MODEL=anthropic:MODEL with ANTHROPIC_API_KEY; docs/llm.md)",
		ErrNoPlan, p.req.raw, quoteList(words))
}

// missingCapabilities are the capabilities of the design the message
// names ("evaluate" -> EVALUATION) that no live agent has.
func (p *planner) missingCapabilities() []string {
	var missing []string
	have := map[string]bool{}
	for _, d := range p.ix.docs {
		have[strings.ToUpper(d.c.Capability)] = true
	}
	for _, capability := range []string{schemas.CapSearch, schemas.CapAnalysis, schemas.CapOrganization, schemas.CapGeneration, schemas.CapTransformation, schemas.CapEvaluation} {
		if !have[capability] && slices.Contains(p.req.stems, stem(strings.ToLower(capability))) {
			missing = append(missing, capability)
		}
	}
	return missing
}

func lastStem(w written) string { return w.stems[len(w.stems)-1] }

func quoteList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, ", ")
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
