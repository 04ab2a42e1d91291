package schemas

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// formatCheckers assert the string formats of JSON Schema a value's schema
// may name (RFC 3339 dates and times, RFC 5321 addresses, RFC 1123 host
// names, IP addresses, URIs, UUIDs); a format not listed is an annotation.
var formatCheckers = map[string]func(string) error{
	"date-time":     checkDateTime,
	"date":          checkDate,
	"time":          checkTime,
	"email":         checkEmail,
	"idn-email":     checkEmail,
	"hostname":      checkHostname,
	"ipv4":          checkIPv4,
	"ipv6":          checkIPv6,
	"uri":           checkURI,
	"iri":           checkURI,
	"uri-reference": checkURIReference,
	"iri-reference": checkURIReference,
	"uuid":          checkUUID,
	"regex":         func(s string) error { _, err := regexp.Compile(s); return err },
	"json-pointer":  checkJSONPointer,
}

func checkFormat(format, s string) error {
	if f, ok := formatCheckers[format]; ok {
		return f(s)
	}
	return nil
}

// checkDateTime: full-date "T" full-time.
func checkDateTime(s string) error {
	if len(s) < len("2006-01-02T15:04:05Z") {
		return errors.New("less than 20 characters long")
	}
	if s[10] != 'T' && s[10] != 't' {
		return errors.New("11th character must be t or T")
	}
	if err := checkDate(s[:10]); err != nil {
		return fmt.Errorf("invalid date element: %w", err)
	}
	if err := checkTime(s[11:]); err != nil {
		return fmt.Errorf("invalid time element: %w", err)
	}
	return nil
}

func checkDate(s string) error {
	_, err := time.Parse(time.DateOnly, s)
	return err
}

// checkTime: hh:mm:ss, an optional fraction, then Z or an offset ±hh:mm;
// second 60 only where the time is 23:59 in UTC (a leap second).
func checkTime(s string) error {
	if len(s) < len("15:04:05Z") || s[2] != ':' || s[5] != ':' {
		return errors.New("not hh:mm:ss followed by a time zone")
	}
	h, okH := twoDigits(s[0:2])
	m, okM := twoDigits(s[3:5])
	sec, okS := twoDigits(s[6:8])
	if !okH || !okM || !okS || h > 23 || m > 59 || sec > 60 {
		return errors.New("hour, minute or second out of range")
	}
	rest := s[8:]
	if frac, ok := strings.CutPrefix(rest, "."); ok {
		digits := len(frac) - len(strings.TrimLeft(frac, "0123456789"))
		if digits == 0 {
			return errors.New("no digits in second fraction")
		}
		rest = frac[digits:]
	}
	if rest != "Z" && rest != "z" {
		if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' {
			return errors.New("time zone must be Z or ±hh:mm")
		}
		zh, okZH := twoDigits(rest[1:3])
		zm, okZM := twoDigits(rest[4:6])
		if !okZH || !okZM || zh > 23 || zm > 59 {
			return errors.New("time zone offset out of range")
		}
		off := zh*60 + zm
		if rest[0] == '+' {
			off = -off
		}
		utc := ((h*60+m+off)%(24*60) + 24*60) % (24 * 60)
		h, m = utc/60, utc%60
	}
	if sec == 60 && (h != 23 || m != 59) {
		return errors.New("invalid leap second")
	}
	return nil
}

func twoDigits(s string) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// checkEmail: local@domain, the local part a dot-atom or a quoted string,
// the domain a host name or a bracketed IP address.
func checkEmail(s string) error {
	if len(s) > 254 {
		return errors.New("more than 254 characters long")
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return errors.New("missing @")
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 {
		return errors.New("local part more than 64 characters long")
	}
	if q, ok := strings.CutPrefix(local, `"`); ok && len(local) > 1 && strings.HasSuffix(q, `"`) {
		if strings.ContainsAny(q[:len(q)-1], `\"`) {
			return errors.New("backslash and quote are not allowed within quoted local part")
		}
	} else {
		if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
			return errors.New("local part has a dot at its start or end, or two in a row")
		}
		for _, r := range local {
			if !isAlnum(r) && !strings.ContainsRune(".!#$%&'*+-/=?^_`{|}~", r) {
				return fmt.Errorf("invalid character %q", r)
			}
		}
	}
	if lit, ok := strings.CutPrefix(domain, "["); ok && strings.HasSuffix(lit, "]") {
		lit = lit[:len(lit)-1]
		if v6, ok := strings.CutPrefix(lit, "IPv6:"); ok {
			return checkIPv6(v6)
		}
		return checkIPv4(lit)
	}
	if err := checkHostname(domain); err != nil {
		return fmt.Errorf("invalid domain: %w", err)
	}
	return nil
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// checkHostname: dot-separated labels of 1 to 63 letters, digits and
// hyphens, no label starting or ending with a hyphen, 253 characters at
// most (a trailing dot aside).
func checkHostname(s string) error {
	s = strings.TrimSuffix(s, ".")
	if len(s) > 253 {
		return errors.New("more than 253 characters long")
	}
	for label := range strings.SplitSeq(s, ".") {
		if len(label) == 0 || len(label) > 63 {
			return errors.New("label must be 1 to 63 characters long")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return errors.New("label starts or ends with a hyphen")
		}
		for _, r := range label {
			if !isAlnum(r) && r != '-' {
				return fmt.Errorf("invalid character %q", r)
			}
		}
	}
	return nil
}

// checkIPv4: four decimals from 0 to 255 without leading zeros.
func checkIPv4(s string) error {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return errors.New("expected four decimals")
	}
	for _, p := range parts {
		if len(p) > 1 && p[0] == '0' {
			return errors.New("leading zeros")
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 {
			return errors.New("decimal must be between 0 and 255")
		}
	}
	return nil
}

func checkIPv6(s string) error {
	if !strings.Contains(s, ":") {
		return errors.New("missing colon")
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return err
	}
	if a.Zone() != "" {
		return errors.New("zone id is not a part of ipv6 address")
	}
	return nil
}

// parseURI parses s, checking an IPv6 host is bracketed and valid (net/url
// does not).
func parseURI(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if host := u.Hostname(); strings.Contains(host, ":") {
		if !strings.Contains(u.Host, "[") || !strings.Contains(u.Host, "]") {
			return nil, errors.New("ipv6 address not enclosed in brackets")
		}
		if err := checkIPv6(host); err != nil {
			return nil, fmt.Errorf("invalid ipv6 address: %w", err)
		}
	}
	return u, nil
}

func checkURI(s string) error {
	u, err := parseURI(s)
	if err != nil {
		return err
	}
	if !u.IsAbs() {
		return errors.New("relative url")
	}
	return nil
}

func checkURIReference(s string) error {
	if strings.Contains(s, `\`) {
		return errors.New(`contains \`)
	}
	_, err := parseURI(s)
	return err
}

// checkUUID: 8-4-4-4-12 hexadecimal digits.
func checkUUID(s string) error {
	groups := strings.Split(s, "-")
	if len(groups) != 5 {
		return errors.New("must have 5 elements")
	}
	for i, g := range groups {
		if want := []int{8, 4, 4, 4, 12}[i]; len(g) != want {
			return fmt.Errorf("element %d must be %d characters long", i+1, want)
		}
		if strings.Trim(g, "0123456789abcdefABCDEF") != "" {
			return fmt.Errorf("element %d is not hexadecimal", i+1)
		}
	}
	return nil
}

// checkJSONPointer: empty, or "/"-separated tokens where ~ is followed by
// 0 or 1.
func checkJSONPointer(s string) error {
	if s != "" && !strings.HasPrefix(s, "/") {
		return errors.New("not starting with /")
	}
	if strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(s), "~") {
		return errors.New("~ must be followed by 0 or 1")
	}
	return nil
}
