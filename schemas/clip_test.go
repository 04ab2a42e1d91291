package schemas

import (
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exactly n", "abcde", 5, "abcde"},
		{"one over", "abcdef", 5, "abcd…"},
		{"long", "the quick brown fox", 10, "the quick…"},
		{"n of 1", "abc", 1, "…"},
		{"n of 0", "abc", 0, ""},
		{"negative n", "abc", -3, ""},
		{"empty", "", 3, ""},
		{"multi-byte fits in runes but not bytes", "héllo", 5, "héllo"},
		{"multi-byte cut on a rune boundary", "été à Paris", 4, "été…"},
		{"four-byte runes", "🌅🌲🌊🌃❄", 3, "🌅🌲…"},
		{"ends with the ellipsis already", "ab…cd", 4, "ab……"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clip(tt.s, tt.n)
			if got != tt.want {
				t.Errorf("Clip(%q, %d) = %q; want %q", tt.s, tt.n, got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Clip(%q, %d) = %q is not valid UTF-8", tt.s, tt.n, got)
			}
			if tt.n > 0 && utf8.RuneCountInString(got) > tt.n {
				t.Errorf("Clip(%q, %d) = %q has %d runes; want at most %d", tt.s, tt.n, got, utf8.RuneCountInString(got), tt.n)
			}
		})
	}
}

// Clip agrees with the rune-slice definition the orchestrator used: the
// first n-1 runes and "…" when s has more than n runes.
func TestClipMatchesRuneSlicing(t *testing.T) {
	for _, s := range []string{"", "a", "héllo wörld", "🌅🌲🌊🌃❄ snow", "plain ascii text of some length"} {
		for n := 1; n <= utf8.RuneCountInString(s)+2; n++ {
			want := s
			if r := []rune(s); len(r) > n {
				want = string(r[:n-1]) + "…"
			}
			if got := Clip(s, n); got != want {
				t.Errorf("Clip(%q, %d) = %q; want %q", s, n, got, want)
			}
		}
	}
}
