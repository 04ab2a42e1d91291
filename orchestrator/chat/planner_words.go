package chat

import (
	"strings"
	"unicode"
)

// A message and a contract are compared word by word, each word reduced to
// a stem so that "summarize", "summarise", "summary" and "summaries" meet,
// as do "categorize" and "categories", "images" and "image".

// written is one whitespace-separated word of a message as written
// ("upper-case", "IMG_0042.jpg"), with the stems of its parts.
type written struct {
	text       string   // as written, without surrounding punctuation
	start, end int      // byte span of text in the message
	parts      []string // lower-case parts: "upper-case" -> upper, case
	stems      []string // stem of each part
}

// splitWritten splits message at white space and takes each word's parts
// (runs of letters and digits).
func splitWritten(message string) []written {
	var out []written
	i := 0
	for i < len(message) {
		for i < len(message) && isSpace(message[i]) {
			i++
		}
		j := i
		for j < len(message) && !isSpace(message[j]) {
			j++
		}
		if j > i {
			s, e := i, j
			for s < e && strings.ContainsRune(trimmed, rune(message[s])) {
				s++
			}
			for e > s && strings.ContainsRune(trimmed, rune(message[e-1])) {
				e--
			}
			if e > s {
				w := written{text: message[s:e], start: s, end: e}
				for _, p := range parts(w.text) {
					w.parts = append(w.parts, p)
					w.stems = append(w.stems, stem(p))
				}
				if len(w.parts) > 0 {
					out = append(out, w)
				}
			}
		}
		i = j
	}
	return out
}

const trimmed = `.,;:!?"'()[]{}“”‘’`

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// parts splits s into lower-case runs of letters and digits, and a
// CamelCase name at its humps: "NodeWordCount" -> node, word, count.
func parts(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]):
			flush()
			cur = append(cur, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// stems returns the stems of the words of s, stop words left out.
func stems(s string) []string {
	var out []string
	for _, p := range parts(s) {
		if !stopWords[p] {
			out = append(out, stem(p))
		}
	}
	return out
}

// suffixes are removed from a word, the first that leaves at least three
// letters, longest first.
var suffixes = []string{
	"isations", "izations", "isation", "ization", "ations", "ating", "ation", "ates", "ated", "ate",
	"isers", "izers", "iser", "izer", "ising", "izing", "ised", "ized", "ises", "izes", "ise", "ize",
	"ies", "ied", "ying", "ings", "ing", "ers", "ed", "er", "es", "is", "s", "y", "e",
}

// synonyms maps the stems of a few common words to the stems contracts use
// for the same thing: "photos" are images, a "pdf" is a document.
var synonyms = map[string]string{
	"photo": "imag", "pictur": "imag", "pic": "imag", "photograph": "imag",
	"pdf": "document", "doc": "document", "paper": "document",
	"classify": "categor", "classif": "categor",
	"backward": "revers",
	"capital":  "titl",
}

// stem reduces a lower-case word to a crude stem: a suffix off, British
// "-yse" and American "-yze" made one, then a synonym applied.
func stem(w string) string {
	if len(w) > 3 && !isNumber(w) {
		for _, suf := range suffixes {
			if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
				w = w[:len(w)-len(suf)]
				break
			}
		}
		if strings.HasSuffix(w, "yz") {
			w = w[:len(w)-1] + "s"
		}
	}
	if s, ok := synonyms[w]; ok {
		return s
	}
	return w
}

func isNumber(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return w != ""
}

// numberWords are the counts a message may spell out.
var numberWords = map[string]int{
	"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
	"eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
}

// stopWords carry no meaning for the planner: they neither pick an agent
// nor belong to a query.
var stopWords = set(
	"a", "an", "the", "and", "or", "then", "them", "it", "its", "into", "in", "of", "for", "me", "my", "mine", "all",
	"some", "with", "to", "by", "please", "can", "you", "could", "on", "about", "that", "those", "these", "this",
	"from", "up", "now", "i", "want", "would", "like", "us", "out", "their", "they", "we", "our", "your", "is", "are",
	"be", "do", "does", "did", "give", "make", "tell", "show", "let", "get", "put", "what", "which", "how", "many",
	"much", "there", "here", "just", "also", "again", "so", "each", "every", "any", "ones", "one's", "last", "time",
	"as", "at", "was", "were", "will", "should", "need", "needs", "have", "has", "had", "agent", "agents", "mesh",
	"agentmesh", "thing", "things", "stuff", "kindly", "using", "use", "run", "via", "per", "well", "very", "same",
	"ok", "okay", "hey", "hi", "thanks", "thank", "after", "before", "where", "who", "if", "not", "no", "yes", "but",
	"too", "only", "more", "most", "than", "way", "one", "whole", "there's", "it's", "i'd", "let's", "say", "write", "list",
)

// connectors may stand between the words that ask and the text to work on:
// "count the words in hello world", "reverse the text: hello".
var connectors = set("in", "of", "on", "for", "to", "into", "from", "with", "as", "is", "text", "string", "phrase",
	"sentence", "words", "word", "the", "this", "following", "-", "called", "named", "saying", "says")

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
