package bus

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Header values of the binary content mode follow the CloudEvents NATS
// protocol binding, section 3.1.3.2 "NATS Header Values": a sender
// percent-encodes every byte of an attribute's UTF-8 string that is a space,
// a double quote, a percent sign or outside printable ASCII; a receiver first
// unquotes a double-quoted value, then undoes one round of percent-encoding,
// accepting lower-case hex and bytes encoded without need, and rejects
// encoded bytes that are not valid UTF-8.

const upperHex = "0123456789ABCDEF"

// needsPercent reports the bytes EncodeHeaderValue encodes: space, '"', '%'
// and everything outside printable ASCII (U+0021 to U+007E).
func needsPercent(c byte) bool { return c <= ' ' || c >= 0x7f || c == '"' || c == '%' }

// EncodeHeaderValue returns v as a NATS header value: each byte of its UTF-8
// form that is a space, a double quote, a percent sign or outside printable
// ASCII becomes %XY with upper-case hex digits. A value with nothing to
// encode is returned as is, without allocating. "Euro € 😀" becomes
// "Euro%20%E2%82%AC%20%F0%9F%98%80".
func EncodeHeaderValue(v string) string {
	n := 0
	for i := 0; i < len(v); i++ {
		if needsPercent(v[i]) {
			n++
		}
	}
	if n == 0 {
		return v
	}
	b := make([]byte, 0, len(v)+2*n)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if needsPercent(c) {
			b = append(b, '%', upperHex[c>>4], upperHex[c&0xf])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// DecodeHeaderValue returns the attribute value a NATS header value carries:
// optional whitespace around it is dropped, a value in double quotes is
// unquoted (a backslash takes the next character literally), and then one
// round of percent-decoding is done; %xy takes upper- or lower-case hex and
// may encode any byte, needed or not. The result must be valid UTF-8: an
// overlong form such as %C0%A0, an encoded surrogate, a stray continuation
// byte or a truncated sequence is an error wrapping ErrInvalidAttribute, as
// are a '%' without two hex digits after it and an unterminated quoted
// string. A value with no quotes and no '%' is returned as is.
func DecodeHeaderValue(v string) (string, error) { return decodeHeaderValue("", v) }

// decodeHeaderValue is DecodeHeaderValue naming the header in its errors.
func decodeHeaderValue(header, v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" || v[0] != '"' && strings.IndexByte(v, '%') < 0 {
		if !utf8.ValidString(v) {
			return "", notUTF8Header(label(header), v, v)
		}
		return v, nil
	}
	s := v
	if v[0] == '"' {
		var err error
		if s, err = unquote(label(header), v); err != nil {
			return "", err
		}
	}
	if strings.IndexByte(s, '%') < 0 {
		if !utf8.ValidString(s) {
			return "", notUTF8Header(label(header), v, s)
		}
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			end := min(i+3, len(s))
			return "", fmt.Errorf("%w: %s %q: %q at byte %d is not a percent-encoded byte: write a percent sign as %%25 and other bytes as %%XY with two hex digits",
				ErrInvalidAttribute, label(header), clip(v), s[i:end], i)
		}
		b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
		i += 2
	}
	if !utf8.Valid(b) {
		return "", notUTF8Header(label(header), v, string(b))
	}
	return string(b), nil
}

// unquote reads an RFC 7230 quoted-string that makes up the whole of v.
func unquote(what, v string) (string, error) {
	b := make([]byte, 0, len(v))
	for i := 1; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			if i+1 >= len(v) {
				return "", fmt.Errorf("%w: %s %q ends in a backslash inside its double quotes: close the quoted string with \"", ErrInvalidAttribute, what, clip(v))
			}
			i++
			b = append(b, v[i])
		case '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("%w: %s %q has %q after its closing double quote: quote the whole value or percent-encode the quote as %%22", ErrInvalidAttribute, what, clip(v), clip(v[i+1:]))
			}
			return string(b), nil
		default:
			b = append(b, c)
		}
	}
	return "", fmt.Errorf("%w: %s %q opens a double-quoted string that does not end: close it with \" or percent-encode the quote as %%22", ErrInvalidAttribute, what, clip(v))
}

// notUTF8Header reports the first byte sequence of decoded that is not
// UTF-8, shown percent-encoded, together with the value as sent.
func notUTF8Header(what, sent, decoded string) error {
	i := 0
	for i < len(decoded) {
		r, size := utf8.DecodeRuneInString(decoded[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	end := min(i+1, len(decoded))
	for end < len(decoded) && end-i < 4 && decoded[end]&0xc0 == 0x80 {
		end++
	}
	var seq strings.Builder
	for j := i; j < end; j++ {
		c := decoded[j]
		seq.WriteString("%" + string(upperHex[c>>4]) + string(upperHex[c&0xf]))
	}
	return fmt.Errorf("%w: %s %q: the bytes %s are not valid UTF-8 (an overlong form, a surrogate, a stray or missing continuation byte): percent-encode the UTF-8 bytes of each character, e.g. € as %%E2%%82%%AC",
		ErrInvalidAttribute, what, clip(sent), seq.String())
}

// label names a header value in errors: "header ce-time value".
func label(header string) string {
	if header == "" {
		return "header value"
	}
	return "header " + header + " value"
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
