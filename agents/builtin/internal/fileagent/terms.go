package fileagent

import "github.com/agentmesh/agentmesh/internal/rank"

// Terms splits s into lower-case search terms (rank.Terms): letters and
// digits only, stop words and single characters dropped, plurals folded.
// Queries and the texts they are matched against go through the same
// function.
func Terms(s string) []string { return rank.Terms(s) }

// Stem folds a plural into its singular form (rank.Stem).
func Stem(w string) string { return rank.Stem(w) }

// TermSet returns the distinct Terms of all the strings.
func TermSet(ss ...string) map[string]bool {
	set := map[string]bool{}
	for _, s := range ss {
		for _, t := range Terms(s) {
			set[t] = true
		}
	}
	return set
}
