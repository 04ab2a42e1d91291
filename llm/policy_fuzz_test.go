package llm_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/llm"
)

// pieceModel streams its answer in the pieces it is given.
type pieceModel struct{ pieces []string }

func (m pieceModel) Chat(ctx context.Context, req llm.Request) (llm.Response, llm.Usage, error) {
	return m.Stream(ctx, req, nil)
}

func (m pieceModel) Stream(_ context.Context, _ llm.Request, onDelta func(llm.Delta)) (llm.Response, llm.Usage, error) {
	for _, p := range m.pieces {
		if onDelta != nil {
			onDelta(llm.Delta{Text: p})
		}
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: strings.Join(m.pieces, "")}}, llm.Usage{}, nil
}

// FuzzRedactStream cuts any answer (a model's output, outside input) into
// pieces anywhere: the redacted stream is the redacted answer, and neither
// holds an address, a key or a card number the rules name, even one split
// between pieces across a space; every piece is valid UTF-8.
func FuzzRedactStream(f *testing.F) {
	f.Add("Write to ann.lee@example.com today.", uint8(3), uint8(9))
	f.Add("key sk-proj-abcdefghijklmnop0123456789 and AKIAABCDEFGHIJKLMNOP", uint8(1), uint8(30))
	f.Add("a@b.co\nx@y.io", uint8(0), uint8(2))
	f.Add("pay with card 4111 1111 now", uint8(16), uint8(5))
	f.Add("card\u00a01234\u00a05678.", uint8(5), uint8(6))
	// A pattern of one's own that matches across spaces, as well as the
	// built-in ones that do not.
	ps, err := llm.PolicyRules{Redact: []string{"api_keys", "emails", `card\s[0-9]{4}\s[0-9]{4}`}}.Policies()
	if err != nil {
		f.Fatal(err)
	}
	g := llm.NewGuard(ps)
	f.Fuzz(func(t *testing.T, text string, cut1, cut2 uint8) {
		if !utf8.ValidString(text) {
			return
		}
		var pieces []string
		rest := text
		for _, c := range []int{int(cut1), int(cut2)} {
			n := min(c, len(rest))
			for n < len(rest) && !utf8.RuneStart(rest[n]) {
				n++ // keep runes whole
			}
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		pieces = append(pieces, rest)
		var streamed strings.Builder
		resp, _, err := g.Model(pieceModel{pieces}).Stream(context.Background(), llm.Request{}, func(d llm.Delta) {
			if !utf8.ValidString(d.Text) {
				t.Fatalf("piece %q is not valid UTF-8 (pieces %q)", d.Text, pieces)
			}
			streamed.WriteString(d.Text)
		})
		if err != nil {
			t.Fatal(err)
		}
		if streamed.String() != resp.Message.Content {
			t.Fatalf("streamed %q, answer %q (pieces %q)", streamed.String(), resp.Message.Content, pieces)
		}
		again := llm.Response{Message: llm.Message{Content: resp.Message.Content}}
		for _, p := range ps {
			if d := p.Response(context.Background(), &again); d.Action != llm.Allow {
				t.Fatalf("a redacted answer %q still matches: %q", resp.Message.Content, again.Message.Content)
			}
		}
	})
}
