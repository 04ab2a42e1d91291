package knowledge

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
)

// Chunking defaults: chunks of at most DefaultChunkChars characters, each
// repeating up to DefaultOverlapChars of the end of the previous chunk of
// its section.
const (
	DefaultChunkChars   = 800
	DefaultOverlapChars = 120
	// MinChunkChars is the smallest chunk size Split accepts.
	MinChunkChars = 64
)

// ChunkVersion names the chunking code: an index object of another
// version is built again.
const ChunkVersion = "1"

// Piece is one chunk of a document: its text, the heading of the section
// it is in (empty without headings) and its position among the document's
// chunks, from 0.
type Piece struct {
	Text     string
	Heading  string
	Position int
}

// ChunkOptions size the chunks: MaxChars (at least MinChunkChars; 0 is
// DefaultChunkChars) and Overlap (less than half of MaxChars; 0 is
// DefaultOverlapChars, clipped to that bound, and negative means none).
type ChunkOptions struct {
	MaxChars int
	Overlap  int
}

func (o ChunkOptions) normalized() ChunkOptions {
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultChunkChars
	}
	o.MaxChars = max(o.MaxChars, MinChunkChars)
	switch {
	case o.Overlap < 0:
		o.Overlap = 0
	case o.Overlap == 0:
		o.Overlap = DefaultOverlapChars
	}
	o.Overlap = min(o.Overlap, o.MaxChars/2-1)
	return o
}

// section is a run of paragraphs under one heading.
type section struct {
	heading    string
	paragraphs []string
}

// Split cuts a document into chunks. text is the document as stored for
// Markdown (its headings start sections; its markup is removed from the
// chunks) and the extracted text (fileagent.ExtractText) for every other
// media type: each line of HTML and PDF text is a paragraph; plain text's
// paragraphs are separated by blank lines, or by line breaks when there
// are no blank lines. Paragraphs are packed into chunks
// of at most o.MaxChars characters; a longer paragraph is cut at sentence
// or word boundaries. Each chunk after the first of a section begins with
// the end of the one before (up to o.Overlap characters, from a word
// boundary), so that a sentence cut between two chunks is whole in one.
func Split(text, mediaType string, o ChunkOptions) []Piece {
	o = o.normalized()
	var sections []section
	if mediaType == fileagent.MediaMarkdown {
		sections = markdownSections(text)
	} else {
		// HTML and PDF text has a line per block or printed line; plain
		// text is wrapped, with blank lines between paragraphs.
		byLine := mediaType == fileagent.MediaHTML || mediaType == fileagent.MediaPDF
		sections = []section{{paragraphs: paragraphs(text, byLine)}}
	}
	var out []Piece
	for _, s := range sections {
		for _, c := range pack(s.paragraphs, o) {
			out = append(out, Piece{Text: c, Heading: s.heading, Position: len(out)})
		}
	}
	return out
}

var (
	mdHeadingLine = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdFenceLine   = regexp.MustCompile("^\\s*(```|~~~)")
)

// markdownSections splits Markdown source at its headings; each section's
// paragraphs (blocks between blank lines, fenced code kept whole) are
// stripped of their markup. A section's heading is the path of headings
// above it ("Returns > Damaged items").
func markdownSections(src string) []section {
	var (
		out   []section
		cur   section
		block []string
		path  []string // headings by level, 1 to 6
		fence bool
	)
	flushBlock := func() {
		if len(block) == 0 {
			return
		}
		if t, err := fileagent.ExtractText([]byte(strings.Join(block, "\n")), fileagent.MediaMarkdown); err == nil && t != "" {
			cur.paragraphs = append(cur.paragraphs, t)
		}
		block = block[:0]
	}
	flushSection := func() {
		flushBlock()
		if len(cur.paragraphs) > 0 {
			out = append(out, cur)
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n") {
		if mdFenceLine.MatchString(line) {
			fence = !fence
			block = append(block, line)
			continue
		}
		if fence {
			block = append(block, line)
			continue
		}
		if m := mdHeadingLine.FindStringSubmatch(line); m != nil {
			flushSection()
			level := len(m[1])
			for len(path) < level {
				path = append(path, "")
			}
			path = append(path[:level-1], strings.TrimSpace(m[2]))
			cur = section{heading: joinHeadings(path)}
			continue
		}
		if strings.TrimSpace(line) == "" {
			flushBlock()
			continue
		}
		block = append(block, line)
	}
	flushSection()
	return out
}

// joinHeadings is the non-empty headings of path joined by " > ".
func joinHeadings(path []string) string {
	var hs []string
	for _, h := range path {
		if h != "" {
			hs = append(hs, h)
		}
	}
	return strings.Join(hs, " > ")
}

// paragraphs splits text at line breaks when byLine is set or text has no
// blank line, else at blank lines; whitespace inside a paragraph is
// collapsed.
func paragraphs(text string, byLine bool) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	sep := "\n\n"
	if byLine || !strings.Contains(text, sep) {
		sep = "\n"
	}
	var out []string
	for p := range strings.SplitSeq(text, sep) {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// pack puts paragraphs into chunks of at most o.MaxChars characters (runes)
// with o.Overlap characters of overlap.
func pack(paras []string, o ChunkOptions) []string {
	var (
		out   []string
		cur   []rune
		fresh bool // cur holds more than the overlap of the last chunk
	)
	emit := func() {
		if t := strings.TrimSpace(string(cur)); t != "" && fresh {
			out = append(out, t)
		}
		cur, fresh = tail(cur, o.Overlap), false
	}
	for _, p := range paras {
		for _, piece := range cutLong([]rune(p), o.MaxChars-o.Overlap-1) {
			if len(cur) > 0 && len(cur)+1+len(piece) > o.MaxChars {
				emit()
			}
			if len(cur) > 0 {
				cur = append(cur, ' ')
			}
			cur, fresh = append(cur, piece...), true
		}
	}
	emit()
	return out
}

// cutLong cuts a paragraph longer than n characters into pieces of at most
// n, at the last sentence end in a piece's second half, else at its last
// space, else at n.
func cutLong(p []rune, n int) [][]rune {
	var out [][]rune
	for len(p) > n {
		at := cutAt(p[:n+1])
		out = append(out, trimRunes(p[:at]))
		p = trimRunes(p[at:])
	}
	if len(p) > 0 {
		out = append(out, p)
	}
	return out
}

// cutAt is where to cut p (len(p) > 1): after the last sentence end in its
// second half, else at the last space there, else before its last rune.
func cutAt(p []rune) int {
	n := len(p) - 1
	for i := n - 1; i >= n/2; i-- {
		if (p[i] == '.' || p[i] == '!' || p[i] == '?' || p[i] == ';') && unicode.IsSpace(p[i+1]) {
			return i + 1
		}
	}
	for i := n; i >= n/2 && i > 0; i-- {
		if unicode.IsSpace(p[i]) {
			return i
		}
	}
	return n
}

// tail is the last n characters of r or fewer, starting at a word.
func tail(r []rune, n int) []rune {
	if n <= 0 || len(r) == 0 {
		return nil
	}
	if len(r) <= n {
		return append([]rune(nil), r...)
	}
	t := r[len(r)-n:]
	for i, c := range t {
		if unicode.IsSpace(c) {
			return append([]rune(nil), trimRunes(t[i:])...)
		}
	}
	return nil // one long word: no overlap rather than half a word
}

func trimRunes(r []rune) []rune {
	for len(r) > 0 && unicode.IsSpace(r[0]) {
		r = r[1:]
	}
	for len(r) > 0 && unicode.IsSpace(r[len(r)-1]) {
		r = r[:len(r)-1]
	}
	return r
}
