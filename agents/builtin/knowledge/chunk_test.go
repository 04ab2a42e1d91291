package knowledge

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
)

func TestSplit(t *testing.T) {
	long := strings.Repeat("Refunds are paid to the original card. ", 8) // 312 characters
	tests := []struct {
		name, text, mediaType string
		o                     ChunkOptions
		want                  []Piece
	}{
		{name: "empty", text: "  \n\n ", mediaType: fileagent.MediaPlain},
		{
			name: "paragraphs packed", mediaType: fileagent.MediaPlain, o: ChunkOptions{MaxChars: 80, Overlap: -1},
			text: "First paragraph here.\n\nSecond one,\nwrapped.\n\nThird paragraph is a little longer than the others.",
			want: []Piece{
				{Text: "First paragraph here. Second one, wrapped.", Position: 0},
				{Text: "Third paragraph is a little longer than the others.", Position: 1},
			},
		},
		{
			name: "lines are paragraphs without blank lines", mediaType: fileagent.MediaPDF, o: ChunkOptions{MaxChars: 64, Overlap: -1},
			text: "Agent mesh overview\nAn agent mesh connects independent agents over a bus.\nScaling means more copies.",
			want: []Piece{
				{Text: "Agent mesh overview", Position: 0},
				{Text: "An agent mesh connects independent agents over a bus.", Position: 1},
				{Text: "Scaling means more copies.", Position: 2},
			},
		},
		{
			name: "markdown sections", mediaType: fileagent.MediaMarkdown, o: ChunkOptions{MaxChars: 200},
			text: "# Refund policy\n\nWe refund **unused** items.\n\n## Window\n\nWithin [30 days](https://x.example).\n\n### Damaged\n\n- report within 7 days\n- keep the box\n\n## Fees\n\n```\nfee: 0\n```\n",
			want: []Piece{
				{Text: "We refund unused items.", Heading: "Refund policy", Position: 0},
				{Text: "Within 30 days.", Heading: "Refund policy > Window", Position: 1},
				{Text: "report within 7 days\nkeep the box", Heading: "Refund policy > Window > Damaged", Position: 2},
				{Text: "fee: 0", Heading: "Refund policy > Fees", Position: 3},
			},
		},
		{
			name: "a long paragraph is cut at sentences with overlap", mediaType: fileagent.MediaPlain, o: ChunkOptions{MaxChars: 120, Overlap: 40},
			text: long,
			want: []Piece{
				{Text: strings.TrimSpace(strings.Repeat("Refunds are paid to the original card. ", 2)), Position: 0},
				{Text: strings.TrimSpace(strings.Repeat("Refunds are paid to the original card. ", 3)), Position: 1},
				{Text: strings.TrimSpace(strings.Repeat("Refunds are paid to the original card. ", 3)), Position: 2},
				{Text: strings.TrimSpace(strings.Repeat("Refunds are paid to the original card. ", 3)), Position: 3},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, tt.mediaType, tt.o)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestChunkOptions(t *testing.T) {
	for _, tt := range []struct{ in, want ChunkOptions }{
		{ChunkOptions{}, ChunkOptions{DefaultChunkChars, DefaultOverlapChars}},
		{ChunkOptions{MaxChars: 10}, ChunkOptions{MinChunkChars, MinChunkChars/2 - 1}},
		{ChunkOptions{MaxChars: 300, Overlap: -5}, ChunkOptions{300, 0}},
		{ChunkOptions{MaxChars: 300, Overlap: 500}, ChunkOptions{300, 149}},
	} {
		if got := tt.in.normalized(); got != tt.want {
			t.Errorf("%+v.normalized() = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// checkPieces asserts what holds of every split: positions in order, no
// empty chunk, none longer than the bound, and for plain text every word
// shorter than half a chunk found whole in some chunk.
func checkPieces(t *testing.T, text, mediaType string, o ChunkOptions, ps []Piece) {
	t.Helper()
	n := o.normalized()
	for i, p := range ps {
		if p.Position != i || strings.TrimSpace(p.Text) == "" || utf8.RuneCountInString(p.Text) > n.MaxChars {
			t.Fatalf("piece %d: position %d, %d characters (max %d): %q", i, p.Position, utf8.RuneCountInString(p.Text), n.MaxChars, p.Text)
		}
	}
	if mediaType != fileagent.MediaPlain || !utf8.ValidString(text) {
		return
	}
	all := make([]string, len(ps))
	for i, p := range ps {
		all[i] = " " + strings.Join(strings.Fields(p.Text), " ") + " "
	}
	joined := strings.Join(all, "\x00")
	for _, w := range strings.Fields(text) {
		if utf8.RuneCountInString(w) < (n.MaxChars-n.Overlap-1)/2 && !strings.Contains(joined, " "+w+" ") {
			t.Fatalf("word %q is in no chunk whole", w)
		}
	}
}

func TestSplitKeepsWords(t *testing.T) {
	text := strings.Repeat("alpha beta gamma delta epsilon. zeta eta theta iota kappa lambda mu.\n", 40)
	for _, o := range []ChunkOptions{{}, {MaxChars: 64}, {MaxChars: 100, Overlap: 30}, {MaxChars: 100, Overlap: -1}} {
		checkPieces(t, text, fileagent.MediaPlain, o, Split(text, fileagent.MediaPlain, o))
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("# A\n\ntext\n\n## B\n\n- x\n- y\n", fileagent.MediaMarkdown, 64, 10)
	f.Add("one two three\n\nfour five six seven eight nine ten eleven twelve", fileagent.MediaPlain, 64, 20)
	f.Add(strings.Repeat("x", 500), fileagent.MediaPlain, 80, 0)
	f.Add("```\n# not a heading\n```\ntext", fileagent.MediaMarkdown, 100, -1)
	f.Fuzz(func(t *testing.T, text, mediaType string, maxChars, overlap int) {
		o := ChunkOptions{MaxChars: maxChars % 4096, Overlap: overlap % 4096}
		checkPieces(t, text, mediaType, o, Split(text, mediaType, o))
	})
}
