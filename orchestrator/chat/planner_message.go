package chat

import (
	"slices"
	"strconv"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// request is a chat message as the planner reads it: its words, the content
// type it names, and the text it carries.
type request struct {
	raw      string
	words    []written
	quoted   string          // a quoted phrase, or the text after a colon
	inQuote  map[int]bool    // words inside quoted
	contents map[string]bool // the content types the message names (images, documents, links)
	isCont   map[int]string  // words that name a content type ("photos", "pdf"; "" for "files")
	numbers  map[int]float64
	stems    []string // stems of the meaningful words, for ranking
}

// contentStems maps the stem of a word naming a content type to the type;
// "files" names no type in particular.
var contentStems = map[string]string{
	stem(schemas.ContentImages): schemas.ContentImages, stem(schemas.ContentDocuments): schemas.ContentDocuments,
	stem(schemas.ContentLinks): schemas.ContentLinks, "url": schemas.ContentLinks, "fil": "",
}

// extensions are the file name extensions that tell a content type.
var extensions = map[string]string{
	"jpg": schemas.ContentImages, "jpeg": schemas.ContentImages, "png": schemas.ContentImages, "gif": schemas.ContentImages,
	"webp": schemas.ContentImages, "pdf": schemas.ContentDocuments, "txt": schemas.ContentDocuments, "md": schemas.ContentDocuments,
	"html": schemas.ContentDocuments, "htm": schemas.ContentDocuments,
}

func parseRequest(message string) *request {
	r := &request{raw: message, words: splitWritten(message), inQuote: map[int]bool{}, contents: map[string]bool{}, isCont: map[int]string{}, numbers: map[int]float64{}}
	if q, s, e, ok := quotedSpan(message); ok {
		r.quoted = q
		for i, w := range r.words {
			if w.start >= s && w.end <= e+1 {
				r.inQuote[i] = true
			}
		}
	}
	for i, w := range r.words {
		if r.inQuote[i] {
			continue
		}
		if len(w.parts) == 1 {
			if n, err := strconv.ParseFloat(w.parts[0], 64); err == nil && isNumber(w.parts[0]) {
				r.numbers[i] = n
			} else if n, ok := numberWords[w.parts[0]]; ok {
				r.numbers[i] = float64(n)
			}
		}
		if len(w.parts) > 1 {
			if ct, ok := extensions[w.parts[len(w.parts)-1]]; ok {
				r.contents[ct] = true // "IMG_0042.jpg" is an image, and the query
			}
		}
		for _, s := range w.stems {
			if ct, ok := contentStems[s]; ok && len(w.parts) == 1 {
				r.isCont[i] = ct
				if ct != "" {
					r.contents[ct] = true
				}
			}
		}
		for j, p := range w.parts {
			if !stopWords[p] {
				r.stems = append(r.stems, w.stems[j])
			}
		}
	}
	return r
}

// quotedSpan finds a quoted phrase ("...", '...', “...”) or, failing that,
// the text after a colon that follows a word: the text to work on, given
// apart from the words that ask.
func quotedSpan(m string) (text string, start, end int, ok bool) {
	for _, q := range [][2]string{{`"`, `"`}, {"“", "”"}, {"'", "'"}, {"‘", "’"}} {
		i := strings.Index(m, q[0])
		if i < 0 || (q[0] == "'" && i > 0 && !isSpace(m[i-1])) { // an apostrophe, as in "it's"
			continue
		}
		j := strings.Index(m[i+len(q[0]):], q[1])
		if j > 0 {
			s := i + len(q[0])
			return strings.TrimSpace(m[s : s+j]), s, s + j, true
		}
	}
	if i := strings.IndexByte(m, ':'); i > 0 && strings.TrimSpace(m[:i]) != "" {
		if t := strings.TrimSpace(m[i+1:]); t != "" {
			return t, i + 1, len(m), true
		}
	}
	return "", 0, 0, false
}

// text is the text the message gives to work on: the quoted phrase, else
// the words after the last word that asks (anchors), else the words before
// the first one, without the connecting words ("count the words in hello
// world" -> "hello world").
func (r *request) text(anchor map[int]bool) string {
	if r.quoted != "" {
		return r.quoted
	}
	last, first := -1, len(r.words)
	for i := range r.words {
		if anchor[i] {
			last = max(last, i)
			first = min(first, i)
		}
	}
	if last < 0 {
		return ""
	}
	if r.pointsAtItself(last + 1) {
		return "" // "count the words of this sentence": the message is the text
	}
	if t := r.span(last+1, len(r.words), false); t != "" {
		return t
	}
	return r.span(0, first, true)
}

// pointsAtItself reports whether the words from i on start with "this"
// among connecting words: "... of this short sentence" speaks of the
// message, it does not carry a text.
func (r *request) pointsAtItself(i int) bool {
	for ; i < len(r.words); i++ {
		w := r.words[i]
		if len(w.parts) != 1 {
			return false
		}
		switch {
		case w.parts[0] == "this":
			return true
		case connectors[w.parts[0]] || stopWords[w.parts[0]]:
			continue
		}
		return false
	}
	return false
}

// span is the message from word i to word j (exclusive) without leading
// connecting and stop words, and without trailing ones when trimEnd is
// set; "" when nothing else is left.
func (r *request) span(i, j int, trimEnd bool) string {
	filler := func(w written) bool {
		return len(w.parts) == 1 && (connectors[w.parts[0]] || stopWords[w.parts[0]])
	}
	for i < j && filler(r.words[i]) {
		i++
	}
	if !slices.ContainsFunc(r.words[i:j], func(w written) bool { return !filler(w) }) {
		return ""
	}
	for trimEnd && j > i && filler(r.words[j-1]) {
		j--
	}
	return strings.TrimSpace(r.raw[r.words[i].start:r.words[j-1].end])
}

// query is the search terms of the message: the quoted phrase, else its
// words that are not anchors, content words, numbers or stop words, as
// written ("sunset" in "Find sunset images and organize them").
func (r *request) query(anchor map[int]bool) string {
	if r.quoted != "" {
		return r.quoted
	}
	var q []string
	for i, w := range r.words {
		if _, cont := r.isCont[i]; anchor[i] || cont {
			continue
		}
		if _, num := r.numbers[i]; num {
			continue
		}
		if slices.ContainsFunc(w.parts, func(p string) bool { return !stopWords[p] && !connectors[p] }) {
			q = append(q, w.text)
		}
	}
	return strings.Join(q, " ")
}
