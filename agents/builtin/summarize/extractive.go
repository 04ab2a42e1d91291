package summarize

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
)

// Sentences splits text into sentences: at '.', '!' or '?' followed by a
// space and an upper-case letter or digit (not after an abbreviation such
// as "Dr." or an initial), and at every line end.
func Sentences(text string) []string {
	var out []string
	for para := range strings.SplitSeq(text, "\n") {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		start := 0
		rs := []rune(para)
		for i := 0; i < len(rs); i++ {
			if rs[i] != '.' && rs[i] != '!' && rs[i] != '?' {
				continue
			}
			j := i + 1
			for j < len(rs) && (rs[j] == '"' || rs[j] == '\'' || rs[j] == ')') {
				j++
			}
			if j < len(rs) && rs[j] == ' ' && j+1 < len(rs) && (unicode.IsUpper(rs[j+1]) || unicode.IsDigit(rs[j+1])) &&
				!(rs[i] == '.' && abbreviation(rs[start:i])) {
				out = appendSentence(out, string(rs[start:j]))
				start = j + 1
				i = j
			}
		}
		out = appendSentence(out, string(rs[start:]))
	}
	return out
}

// abbreviations end with a period that does not end a sentence.
var abbreviations = map[string]bool{
	"dr": true, "mr": true, "mrs": true, "ms": true, "prof": true, "st": true, "jr": true, "sr": true,
	"vs": true, "etc": true, "e.g": true, "i.e": true, "fig": true, "no": true, "approx": true, "inc": true,
}

// abbreviation reports whether the last word of before is an abbreviation
// or a single letter (an initial).
func abbreviation(before []rune) bool {
	k := len(before)
	for k > 0 && before[k-1] != ' ' {
		k--
	}
	w := strings.ToLower(string(before[k:]))
	return abbreviations[w] || len([]rune(w)) == 1 && unicode.IsLetter([]rune(w)[0])
}

func appendSentence(out []string, s string) []string {
	if s = strings.TrimSpace(s); s != "" {
		out = append(out, s)
	}
	return out
}

// Extractive summarises text by sentence scoring: each sentence scores the
// mean document frequency of its terms (so it is about what the text is
// most about), short fragments and headings are penalised, the first
// sentence gets a small lead bonus, and the best n sentences are returned in
// their original order.
func Extractive(text string, n int) []string {
	sentences := Sentences(text)
	if n <= 0 || len(sentences) == 0 {
		return nil
	}
	if len(sentences) <= n {
		return sentences
	}
	freq := map[string]float64{}
	for _, t := range fileagent.Terms(text) {
		freq[t]++
	}
	maxFreq := 0.0
	for _, f := range freq {
		maxFreq = math.Max(maxFreq, f)
	}
	type scored struct {
		i     int
		score float64
	}
	all := make([]scored, len(sentences))
	for i, s := range sentences {
		terms := fileagent.Terms(s)
		score := 0.0
		for _, t := range terms {
			score += freq[t] / maxFreq
		}
		if len(terms) > 0 {
			score /= math.Sqrt(float64(len(terms))) // favour dense sentences without rewarding length alone
		}
		if len(terms) < 4 {
			score *= 0.3 // a heading or a fragment
		}
		if last := s[len(s)-1]; last != '.' && last != '!' && last != '?' {
			score *= 0.6
		}
		if i == 0 {
			score *= 1.2
		}
		all[i] = scored{i, score}
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.i - b.i
	})
	picked := all[:n]
	slices.SortFunc(picked, func(a, b scored) int { return a.i - b.i })
	out := make([]string, n)
	for k, p := range picked {
		out[k] = sentences[p.i]
	}
	return out
}
