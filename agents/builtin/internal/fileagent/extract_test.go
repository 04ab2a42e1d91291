package fileagent_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
)

func TestExtractTextOfSamples(t *testing.T) {
	want := map[string]struct{ has, hasNot []string }{
		"nats-notes.txt":      {has: []string{"JetStream adds persistence", "compare-and-set"}},
		"photography-tips.md": {has: []string{"Photographing sunsets", "arrive early and stay", "the rule of thirds for more"}, hasNot: []string{"**", "](", "## "}},
		"forest-report.html":  {has: []string{"Forest survey 2024", "canopy & let light", "Trees counted: 4,318"}, hasNot: []string{"<p>", "tracking", "font-family", "&amp;"}},
		"mesh-overview.pdf":   {has: []string{"Agent mesh overview\n", "An agent mesh connects independent agents over a message bus.\n", "Scaling an agent means starting more copies of it."}},
	}
	for _, d := range samples.Documents() {
		t.Run(d.Name, func(t *testing.T) {
			kind := fileagent.DocumentType(d.MediaType, d.Name)
			text, err := fileagent.ExtractText(d.Content, kind)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range want[d.Name].has {
				if !strings.Contains(text, s) {
					t.Errorf("text lacks %q:\n%s", s, text)
				}
			}
			for _, s := range want[d.Name].hasNot {
				if strings.Contains(text, s) {
					t.Errorf("text still has %q:\n%s", s, text)
				}
			}
		})
	}
}

// A PDF made by the fixture with many lines and characters that need
// escaping comes back line by line.
func TestExtractTextPDFFixture(t *testing.T) {
	lines := []string{"Quarterly report (draft)", "Revenue grew by 12% \\ year on year.", "Costs fell."}
	text, err := fileagent.ExtractText(samples.PDF("Report", lines...), fileagent.MediaPDF)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(text, "\n")
	if want := append([]string{"Report"}, lines...); !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestExtractTextErrors(t *testing.T) {
	pdf := samples.PDF("T", "x")
	tests := []struct {
		name, mediaType string
		content         []byte
		want            error
	}{
		{"unsupported type", "image/png", []byte("x"), fileagent.ErrUnsupported},
		{"pdf that is not", fileagent.MediaPDF, []byte("hello"), fileagent.ErrCorruptDocument},
		{"truncated pdf", fileagent.MediaPDF, pdf[:len(pdf)/2], fileagent.ErrCorruptDocument},
		{"pdf header only", fileagent.MediaPDF, []byte("%PDF-1.4\n"), fileagent.ErrCorruptDocument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fileagent.ExtractText(tt.content, tt.mediaType)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ExtractText: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDocumentType(t *testing.T) {
	tests := []struct{ mediaType, filename, want string }{
		{"text/plain; charset=utf-8", "a.txt", fileagent.MediaPlain},
		{"text/plain; charset=utf-8", "README.md", fileagent.MediaMarkdown},
		{"text/html; charset=utf-8", "x", fileagent.MediaHTML},
		{"text/plain", "page.htm", fileagent.MediaHTML},
		{"application/octet-stream", "paper.PDF", fileagent.MediaPDF},
		{"application/pdf", "", fileagent.MediaPDF},
		{"image/jpeg", "a.jpg", ""},
		{"image/jpeg", "fake.pdf", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := fileagent.DocumentType(tt.mediaType, tt.filename); got != tt.want {
			t.Errorf("DocumentType(%q, %q) = %q, want %q", tt.mediaType, tt.filename, got, tt.want)
		}
	}
}

func TestHTMLEdgeCases(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<p>a</p><p>b</p>", "a\n\nb"},
		{"x<script>if (a<b) {}</script>y", "xy"},
		{"<STYLE>p{}</STYLE>Text &lt;ok&gt; &eacute;", "Text <ok> é"},
		{"a <!-- <p>hidden</p> --> b", "a b"},
		{"unterminated <b", "unterminated"},
		{"<script>never closed", ""},
	}
	for _, tt := range tests {
		got, err := fileagent.ExtractText([]byte(tt.in), fileagent.MediaHTML)
		if err != nil || got != tt.want {
			t.Errorf("HTML %q → %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func FuzzExtractText(f *testing.F) {
	for _, d := range samples.Documents() {
		f.Add(d.Content, fileagent.DocumentType(d.MediaType, d.Name))
	}
	f.Fuzz(func(t *testing.T, content []byte, mediaType string) {
		text, err := fileagent.ExtractText(content, mediaType)
		if err == nil && len(text) > fileagent.MaxExtractBytes {
			t.Fatalf("text of %d bytes", len(text))
		}
	})
}
