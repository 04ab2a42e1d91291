package chat

import (
	"maps"
	"slices"
	"strings"
)

// queryParams are the names of a string param that takes search terms.
var queryParams = []string{"query", "q", "keywords", "search", "topic"}

func isQueryParam(name string) bool { return slices.Contains(queryParams, name) }

// fill sets d's params from the message: the search terms into its query
// param, the enum values the message names, and each number next to a
// word of an integer param's name or description ("3 sunset images" ->
// limit 3, "in 2 sentences" -> sentences 2) when the schema allows it.
// Params the message does not speak of keep the agent's defaults.
func (p *planner) fill(d *agentDoc, params map[string]any) {
	m := p.matches[d.c.Name]
	for _, prm := range d.params {
		if _, set := params[prm.name]; set {
			continue
		}
		switch {
		case isQueryParam(prm.name) && (prm.typ == "string" || prm.typ == "") && p.query != "":
			params[prm.name] = p.query
		case prm.name == "query" && (prm.typ == "string" || prm.typ == ""):
			// The message names nothing to look for ("summarize the
			// documents"): ask for everything, rather than leave the agent
			// to search for the message's own words.
			params[prm.name] = ""
		case len(prm.enum) > 0 && m.enums[prm.name] != "":
			params[prm.name] = m.enums[prm.name]
		case prm.typ == "boolean" && p.namesAll(prm.name):
			params[prm.name] = true
		case prm.typ == "integer" || prm.typ == "number":
			if n, ok := p.number(prm); ok {
				if prm.typ == "integer" {
					params[prm.name] = int64(n)
				} else {
					params[prm.name] = n
				}
			}
		}
	}
}

// namesAll reports whether the message has every word of a param's name
// ("require approval" for require_approval; "approval" alone is not
// "approved").
func (p *planner) namesAll(name string) bool {
	have := map[string]bool{}
	for _, s := range p.req.stems {
		have[s] = true
	}
	st := stems(name)
	return len(st) > 0 && !slices.ContainsFunc(st, func(s string) bool { return !have[s] })
}

// number finds a number of the message next to a word of prm's name or
// description, within its bounds.
func (p *planner) number(prm paramInfo) (float64, bool) {
	words := map[string]bool{}
	for _, s := range prm.words {
		if !isNumber(s) {
			words[s] = true
		}
	}
	for _, i := range slices.Sorted(maps.Keys(p.req.numbers)) {
		n := p.req.numbers[i]
		if prm.typ == "integer" && n != float64(int64(n)) {
			continue
		}
		if (prm.min != nil && n < *prm.min) || (prm.max != nil && n > *prm.max) {
			continue
		}
		if p.near(i, words) {
			return n, true
		}
	}
	return 0, false
}

// near reports whether one of the meaningful words just before word i, or
// the three just after it, is in words.
func (p *planner) near(i int, words map[string]bool) bool {
	hit := func(j int) bool {
		return slices.ContainsFunc(p.req.words[j].stems, func(s string) bool { return words[s] })
	}
	for j, seen := i-1, 0; j >= 0 && seen < 1; j-- {
		if p.meaningful(j) {
			if hit(j) {
				return true
			}
			seen++
		}
	}
	for j, seen := i+1, 0; j < len(p.req.words) && seen < 3; j++ {
		if p.meaningful(j) {
			if hit(j) {
				return true
			}
			seen++
		}
	}
	return false
}

func (p *planner) meaningful(j int) bool {
	return slices.ContainsFunc(p.req.words[j].parts, func(s string) bool { return !stopWords[s] || strings.EqualFold(s, "most") })
}
