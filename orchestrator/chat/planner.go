package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// ErrNoPlan reports a message the offline planner cannot turn into a chain
// of live agents.
var ErrNoPlan = errors.New("offline planner: no plan")

// Plan is the offline planner's chain of agent calls, in order.
type Plan struct {
	Steps []PlanStep
	Query string // the search query taken from the message, if any
}

// PlanStep is one agent call of a plan.
type PlanStep struct {
	Agent  string
	Params map[string]any
	Reason string // why the step is there: "asked: organize" or "feeds CATEGORIZATION to FolderAgent"
}

// Agents lists the plan's agents in order.
func (p Plan) Agents() []string {
	out := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = s.Agent
	}
	return out
}

// intents maps words of a message to the capability they ask for.
var intents = map[string]string{
	"find": schemas.CapSearch, "search": schemas.CapSearch, "look": schemas.CapSearch, "locate": schemas.CapSearch,
	"fetch": schemas.CapSearch, "get": schemas.CapSearch, "show": schemas.CapSearch, "retrieve": schemas.CapSearch,
	"categorize": schemas.CapAnalysis, "categorise": schemas.CapAnalysis, "analyze": schemas.CapAnalysis,
	"analyse": schemas.CapAnalysis, "classify": schemas.CapAnalysis, "label": schemas.CapAnalysis,
	"describe": schemas.CapAnalysis, "tag": schemas.CapAnalysis, "group": schemas.CapAnalysis,
	"organize": schemas.CapOrganization, "organise": schemas.CapOrganization, "folder": schemas.CapOrganization,
	"folders": schemas.CapOrganization, "sort": schemas.CapOrganization, "arrange": schemas.CapOrganization,
	"move":      schemas.CapOrganization,
	"summarize": schemas.CapGeneration, "summarise": schemas.CapGeneration, "summary": schemas.CapGeneration,
	"write": schemas.CapGeneration, "report": schemas.CapGeneration, "generate": schemas.CapGeneration,
	"convert": schemas.CapTransformation, "transform": schemas.CapTransformation, "resize": schemas.CapTransformation,
	"evaluate": schemas.CapEvaluation, "score": schemas.CapEvaluation, "rate": schemas.CapEvaluation,
}

// contentWords maps words of a message to the content type they name.
var contentWords = map[string]string{
	"image": schemas.ContentImages, "images": schemas.ContentImages, "photo": schemas.ContentImages,
	"photos": schemas.ContentImages, "picture": schemas.ContentImages, "pictures": schemas.ContentImages,
	"pics":     schemas.ContentImages,
	"document": schemas.ContentDocuments, "documents": schemas.ContentDocuments, "docs": schemas.ContentDocuments,
	"pdf": schemas.ContentDocuments, "pdfs": schemas.ContentDocuments, "papers": schemas.ContentDocuments,
	"files": "", "file": "",
	"link": schemas.ContentLinks, "links": schemas.ContentLinks, "urls": schemas.ContentLinks,
}

var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "then": true, "them": true, "it": true, "into": true,
	"in": true, "of": true, "for": true, "me": true, "my": true, "all": true, "some": true, "with": true,
	"to": true, "by": true, "please": true, "can": true, "you": true, "could": true, "on": true, "about": true,
	"that": true, "those": true, "these": true, "this": true, "from": true, "up": true, "now": true, "i": true,
	"want": true, "would": true, "like": true, "us": true, "out": true, "their": true, "they": true,
}

// PlanOffline picks a chain of live agents for message without an LLM:
// the capabilities the message asks for ("find" -> SEARCH, "categorize" ->
// ANALYSIS, "organize"/"folders" -> ORGANIZATION, "summarize" ->
// GENERATION), in the order the message names them, each served by the
// live agent whose description and content types best match the message.
// Every step's required inputs must be fed by state (slots) or an earlier
// step's outputs, by (data type, hint); when they are not, an agent that
// produces the missing type is inserted before it (search -> analysis ->
// folder, because the folder agent needs a CATEGORIZATION). can_chain_with
// is respected where it leaves a choice. The query for SEARCH agents comes
// from the message ("sunset" in "Find sunset images and organize them").
func PlanOffline(message string, contracts []schemas.AgentContract, slots map[string]schemas.TypedValue, router *route.Router) (Plan, error) {
	if router == nil {
		router = route.NewRouter()
	}
	words := tokenize(message)
	var asked []string
	for _, w := range words {
		if c, ok := intents[w]; ok && !slices.Contains(asked, c) {
			asked = append(asked, c)
		}
	}
	if len(asked) == 0 {
		// No verb the planner knows: the live agent whose name and
		// description the message speaks of ("count the words" ->
		// NodeWordCount, "Counts the words of documents"), fed like any
		// other.
		return planByDescription(message, words, contracts, slots, router)
	}
	// Data flows search -> analysis -> organization/generation whatever
	// order the words come in.
	rank := map[string]int{schemas.CapSearch: 0, schemas.CapTransformation: 1, schemas.CapAnalysis: 2, schemas.CapEvaluation: 3, schemas.CapOrganization: 4, schemas.CapGeneration: 5}
	slices.SortStableFunc(asked, func(a, b string) int { return rank[a] - rank[b] })

	content := ""
	for _, w := range words {
		if ct, ok := contentWords[w]; ok && ct != "" {
			content = ct
			break
		}
	}
	p := &planner{words: words, content: content, contracts: contracts, router: router, have: map[typeHint]bool{}, wanted: map[int][]schemas.TypedInput{}}
	// What the agents of each asked capability need, so that an earlier
	// capability prefers an agent that feeds a later one.
	for i, capability := range asked {
		for _, c := range contracts {
			if strings.EqualFold(c.Capability, capability) {
				for _, in := range c.Inputs {
					if in.Required {
						p.wanted[i] = append(p.wanted[i], in)
					}
				}
			}
		}
	}
	for _, v := range slots {
		p.have[typeHint{v.DataType, v.ContentTypeHint}] = true
	}
	plan := Plan{Query: extractQuery(message)}
	var missing []string
	for i, capability := range asked {
		p.later = nil
		for j := i + 1; j < len(asked); j++ {
			p.later = append(p.later, p.wanted[j]...)
		}
		c, ok := p.best(capability, plan.Steps)
		if !ok {
			missing = append(missing, capability)
			continue
		}
		if slices.ContainsFunc(plan.Steps, func(s PlanStep) bool { return s.Agent == c.Name }) {
			continue
		}
		steps, err := p.feed(c, plan.Steps, 0)
		if err != nil {
			return Plan{}, err
		}
		plan.Steps = append(plan.Steps, steps...)
		plan.Steps = append(plan.Steps, p.step(c, "asked: "+strings.ToLower(capability), plan.Query))
	}
	if len(plan.Steps) == 0 || len(missing) > 0 {
		return Plan{}, fmt.Errorf("%w: no live agent has capability %s; start one (agentmesh agent NAME) or configure an LLM", ErrNoPlan, strings.Join(missing, ", "))
	}
	if !slices.ContainsFunc(plan.Steps, func(s PlanStep) bool { return len(s.Params) > 0 }) {
		plan.Query = ""
	}
	return plan, nil
}

// minDescribed is how many of a message's words an agent's name and
// description must share for the planner to choose it without a verb it
// knows.
const minDescribed = 2

// planByDescription plans the one live agent that shares the most
// meaningful words (at least minDescribed) with the message, after the
// agents that feed its required inputs.
func planByDescription(message string, words []string, contracts []schemas.AgentContract, slots map[string]schemas.TypedValue, router *route.Router) (Plan, error) {
	best, bestScore := schemas.AgentContract{}, 0
	for _, c := range contracts {
		score := overlap(words, append(tokenize(splitCamel(c.Name)), tokenize(c.Description)...))
		if score > bestScore || (score == bestScore && score > 0 && c.Name < best.Name) {
			best, bestScore = c, score
		}
	}
	if bestScore < minDescribed {
		return Plan{}, fmt.Errorf("%w: %q asks for nothing the planner recognises and no live agent's description matches it; say what to do (find, categorize, organize, summarize, or words from an agent's description) or configure an LLM with OPENAI_API_KEY (or AGENTMESH_MODEL=anthropic:MODEL with ANTHROPIC_API_KEY; docs/llm.md)",
			ErrNoPlan, message)
	}
	p := &planner{words: words, contracts: contracts, router: router, have: map[typeHint]bool{}, wanted: map[int][]schemas.TypedInput{}}
	for _, v := range slots {
		p.have[typeHint{v.DataType, v.ContentTypeHint}] = true
	}
	plan := Plan{Query: extractQuery(message)}
	steps, err := p.feed(best, nil, 0)
	if err != nil {
		return Plan{}, err
	}
	plan.Steps = append(steps, p.step(best, fmt.Sprintf("described: %d words of the message match", bestScore), plan.Query))
	if !slices.ContainsFunc(plan.Steps, func(s PlanStep) bool { return len(s.Params) > 0 }) {
		plan.Query = ""
	}
	return plan, nil
}

// splitCamel writes "NodeWordCount" as "Node Word Count".
func splitCamel(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// typeHint is a (data type, content hint) pair.
type typeHint struct{ dataType, hint string }

type planner struct {
	words     []string
	content   string
	contracts []schemas.AgentContract
	router    *route.Router
	have      map[typeHint]bool // (data type, hint) available so far
	wanted    map[int][]schemas.TypedInput
	later     []schemas.TypedInput // required inputs of the agents of later asked capabilities
}

// best is the live agent of capability that best matches the message.
func (p *planner) best(capability string, before []PlanStep) (schemas.AgentContract, bool) {
	var cands []schemas.AgentContract
	for _, c := range p.contracts {
		if strings.EqualFold(c.Capability, capability) {
			cands = append(cands, c)
		}
	}
	return p.pick(cands, before)
}

// pick chooses among candidates: those the previous step may chain with
// first, then the best description and content-type match, then by name.
func (p *planner) pick(cands []schemas.AgentContract, before []PlanStep) (schemas.AgentContract, bool) {
	if len(cands) == 0 {
		return schemas.AgentContract{}, false
	}
	var prev *schemas.AgentContract
	if len(before) > 0 {
		if c, ok := p.contract(before[len(before)-1].Agent); ok {
			prev = &c
		}
	}
	score := func(c schemas.AgentContract) int {
		s := overlap(p.words, tokenize(c.Name+" "+c.Description))
		if p.content != "" && handles(c, p.content) {
			s += 3
		}
		for _, in := range p.later {
			if produces(c, in) && !p.available(in) {
				s += 5
				break
			}
		}
		if prev != nil && len(prev.CanChainWith) > 0 && slices.Contains(prev.CanChainWith, c.Name) {
			s += 10
		}
		if prev != nil && len(prev.CanChainWith) > 0 && !slices.Contains(prev.CanChainWith, c.Name) {
			s -= 10
		}
		return s
	}
	best := slices.MaxFunc(cands, func(a, b schemas.AgentContract) int {
		if d := score(a) - score(b); d != 0 {
			return d
		}
		return strings.Compare(b.Name, a.Name) // the smaller name wins a tie
	})
	return best, true
}

// feed returns the steps to insert before c so that its required inputs
// have a source, and marks c's outputs as available.
func (p *planner) feed(c schemas.AgentContract, before []PlanStep, depth int) ([]PlanStep, error) {
	var steps []PlanStep
	for _, in := range c.Inputs {
		if !in.Required || p.available(in) {
			continue
		}
		if depth >= 3 {
			return nil, fmt.Errorf("%w: %s needs %s%s and no chain of live agents produces it", ErrNoPlan, c.Name, in.DataType, route.HintSuffix(in.ContentTypeHint))
		}
		var producers []schemas.AgentContract
		for _, o := range p.contracts {
			if o.Name == c.Name || slices.ContainsFunc(before, func(s PlanStep) bool { return s.Agent == o.Name }) {
				continue
			}
			if produces(o, in) {
				producers = append(producers, o)
			}
		}
		prod, ok := p.pick(producers, append(slices.Clone(before), steps...))
		if !ok {
			return nil, fmt.Errorf("%w: %s needs %s%s (input %q) and no live agent produces it; start one that does", ErrNoPlan, c.Name, in.DataType, route.HintSuffix(in.ContentTypeHint), in.Name)
		}
		sub, err := p.feed(prod, append(slices.Clone(before), steps...), depth+1)
		if err != nil {
			return nil, err
		}
		steps = append(steps, sub...)
		steps = append(steps, p.step(prod, fmt.Sprintf("feeds %s to %s", in.DataType, c.Name), extractQuery(strings.Join(p.words, " "))))
	}
	p.markOutputs(c)
	return steps, nil
}

func (p *planner) step(c schemas.AgentContract, reason, query string) PlanStep {
	p.markOutputs(c)
	st := PlanStep{Agent: c.Name, Reason: reason, Params: map[string]any{}}
	if prop := queryParam(c); prop != "" && query != "" && strings.EqualFold(c.Capability, schemas.CapSearch) {
		st.Params[prop] = query
	}
	return st
}

func (p *planner) markOutputs(c schemas.AgentContract) {
	for _, o := range c.Outputs {
		p.have[typeHint{o.DataType, o.ContentTypeHint}] = true
	}
}

// available reports whether state or an earlier step provides in.
func (p *planner) available(in schemas.TypedInput) bool {
	for k := range p.have {
		if k.dataType != in.DataType {
			continue
		}
		if in.ContentTypeHint == "" || in.ContentTypeHint == schemas.ContentMixed || k.hint == in.ContentTypeHint || k.hint == "" {
			return true
		}
	}
	return false
}

func (p *planner) contract(name string) (schemas.AgentContract, bool) {
	for _, c := range p.contracts {
		if c.Name == name {
			return c, true
		}
	}
	return schemas.AgentContract{}, false
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

// handles reports whether c reads or writes content of the given type.
func handles(c schemas.AgentContract, content string) bool {
	for _, in := range c.Inputs {
		if in.ContentTypeHint == content {
			return true
		}
	}
	for _, o := range c.Outputs {
		if o.ContentTypeHint == content {
			return true
		}
	}
	return strings.Contains(strings.ToLower(c.Description), content)
}

// queryParam is the name of the string parameter a query goes into: the
// params schema's "query", "q", "text", "topic" or "keywords" property.
func queryParam(c schemas.AgentContract) string {
	if len(c.Params) == 0 {
		return ""
	}
	var sch struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(c.Params, &sch) != nil {
		return ""
	}
	for _, name := range []string{"query", "q", "text", "topic", "keywords"} {
		if prop, ok := sch.Properties[name]; ok && (prop.Type == nil || prop.Type == "string") {
			return name
		}
	}
	return ""
}

// extractQuery takes the search terms from a message: a quoted phrase when
// there is one, else the words after the first search verb up to the next
// verb, without content words ("images") and stop words.
func extractQuery(message string) string {
	for _, q := range []string{`"`, `'`, "“"} {
		if i := strings.Index(message, q); i >= 0 {
			closing := q
			if q == "“" {
				closing = "”"
			}
			if j := strings.Index(message[i+len(q):], closing); j > 0 {
				return strings.TrimSpace(message[i+len(q) : i+len(q)+j])
			}
		}
	}
	words := tokenize(message)
	start := 0
	for i, w := range words {
		if intents[w] == schemas.CapSearch {
			start = i + 1
			break
		}
	}
	var q []string
	for _, w := range words[start:] {
		if _, verb := intents[w]; verb {
			if len(q) > 0 {
				break
			}
			continue
		}
		if _, ok := contentWords[w]; ok {
			continue
		}
		if stopWords[w] {
			if len(q) > 0 && (w == "and" || w == "then") {
				break
			}
			continue
		}
		q = append(q, w)
	}
	if len(q) == 0 && start > 0 { // the verb came last: "the beach photos you find"
		for _, w := range words {
			_, verb := intents[w]
			_, content := contentWords[w]
			if !verb && !content && !stopWords[w] {
				q = append(q, w)
			}
		}
	}
	return strings.Join(q, " ")
}

func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-'
	})
}

// overlap counts the message's meaningful words found in text.
func overlap(words, text []string) int {
	set := map[string]bool{}
	for _, w := range text {
		set[w] = true
		set[strings.TrimSuffix(w, "s")] = true
	}
	n := 0
	for _, w := range words {
		if stopWords[w] {
			continue
		}
		if set[w] || set[strings.TrimSuffix(w, "s")] {
			n++
		}
	}
	return n
}
