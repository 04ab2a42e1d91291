package chat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// determiners follow a verb: "delete all images", "tag the photos".
var determiners = set("all", "the", "my", "these", "those", "every", "each", "them", "it", "our")

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
	if stopWords[first] || connectors[first] || !determiners[next] {
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

func quoteList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, ", ")
}
