package schemas

import "unicode/utf8"

// Clip shortens s to at most n characters (runes, so a multi-byte character
// is never split). A clipped string ends with "…", which counts as one of
// the n. Strings of n characters or fewer come back unchanged; n below 1
// gives "".
func Clip(s string, n int) string {
	if n < 1 {
		return ""
	}
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	k := 0
	for i := range s {
		if k == n-1 {
			return s[:i] + "…"
		}
		k++
	}
	return s // not reached: s has more than n runes
}
