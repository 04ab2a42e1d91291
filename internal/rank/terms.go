package rank

import (
	"strings"
	"unicode"
)

// stopWords are dropped from queries and texts: function words, and the
// words people use to ask for files rather than to say what is in them.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or not of to in on at by for from with into onto about as is are was were be been
		it its this that these those there here which who what whose me my our your their them they we you i he she his her
		find search show get list give look fetch bring all any some every each please can could would will should do does
		image images photo photos picture pictures pic pics file files document documents doc docs text texts
		organize organise organized organised sort folder folders put move them then also only just more most very than so
		has have had like such no yes if but when where how up down out over under`) {
		m[w] = true
	}
	return m
}()

// Terms splits s into lower-case search terms: letters and digits only,
// stop words and single characters dropped, and plurals folded ("sunsets"
// and "sunset" give the same term, as do "cities" and "city"). Queries and
// the texts they are matched against go through the same function.
func Terms(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) < 2 || stopWords[w] {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}

// Stem folds a plural into its singular form ("cities" → "city", "trees" →
// "tree"); other words are returned as they are.
func Stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}
