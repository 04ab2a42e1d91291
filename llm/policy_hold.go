package llm

import (
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// MaxStreamHold is the most text a redaction pattern that matches across
// spaces makes a guard hold back in a stream: a pattern whose matches may
// be longer (an unbounded repetition, "secret: .*") holds this much, and a
// longer match split between pieces can go out unredacted in the stream
// (the whole answer is redacted still).
const MaxStreamHold = 256

// streamHold is how many bytes of a stream past its last space pattern
// needs to match whole: 0 when no match holds a space (streaming a word
// at a time is enough), else its longest match, at most MaxStreamHold.
func streamHold(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return MaxStreamHold
	}
	re = re.Simplify()
	if !holdsSpace(re) {
		return 0
	}
	if n := longest(re); n >= 0 && n < MaxStreamHold {
		return n
	}
	return MaxStreamHold
}

// holdsSpace reports whether a match of re may hold a space.
func holdsSpace(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if unicode.IsSpace(r) {
				return true
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for _, sp := range spaces {
				if re.Rune[i] <= sp && sp <= re.Rune[i+1] {
					return true
				}
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	}
	for _, sub := range re.Sub {
		if holdsSpace(sub) {
			return true
		}
	}
	return false
}

// spaces are the runes unicode.IsSpace reports.
var spaces = []rune{'\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005,
	0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}

// longest is the most bytes a match of re may take, -1 for no bound.
func longest(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				n += utf8.UTFMax // a rune of another case may be longer
			} else {
				n += utf8.RuneLen(r)
			}
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		if re.Max < 0 {
			return -1
		}
		n := longest(re.Sub[0])
		if n < 0 {
			return -1
		}
		return re.Max * n
	case syntax.OpConcat:
		total := 0
		for _, sub := range re.Sub {
			n := longest(sub)
			if n < 0 {
				return -1
			}
			total += n
		}
		return total
	case syntax.OpAlternate:
		most := 0
		for _, sub := range re.Sub {
			n := longest(sub)
			if n < 0 {
				return -1
			}
			most = max(most, n)
		}
		return most
	case syntax.OpCapture, syntax.OpQuest:
		return longest(re.Sub[0])
	}
	return 0 // empty matches, anchors, boundaries
}
