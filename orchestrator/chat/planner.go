package chat

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// ErrNoPlan reports a message the offline planner cannot turn into a chain
// of live agents; the error says what is missing. Its code is
// invalid_request.
var ErrNoPlan = schemas.NewError(schemas.CodeInvalidRequest, "I can't plan this without a model")

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
// documents search). An agent that produces a content type the message
// names is asked for too ("the sunset photos" asks for images).
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

func lastStem(w written) string { return w.stems[len(w.stems)-1] }
