package docsearch

import (
	"cmp"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/schemas"
)

// DigestSize is how many keywords a digest keeps.
const DigestSize = 32

// Digest returns the document's most frequent terms, most frequent first
// (ties by first appearance), at most DigestSize of them: the short keyword
// summary cached in a document's metadata and matched by searches.
func Digest(text string) []string {
	counts := map[string]int{}
	first := map[string]int{}
	for i, t := range fileagent.Terms(text) {
		if _, seen := first[t]; !seen {
			first[t] = i
		}
		counts[t]++
	}
	terms := make([]string, 0, len(counts))
	for t := range counts {
		if isNumber(t) {
			continue
		}
		terms = append(terms, t)
	}
	slices.SortFunc(terms, func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(first[a], first[b])
	})
	if len(terms) > DigestSize {
		terms = terms[:DigestSize]
	}
	return terms
}

// MaxTitle bounds a Title, in characters.
const MaxTitle = 120

// Title is the first non-empty line of text, clipped to MaxTitle characters.
func Title(text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return schemas.Clip(line, MaxTitle)
		}
	}
	return ""
}

func isNumber(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
