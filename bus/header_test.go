package bus_test

// Conformance of binary-mode header values with the CloudEvents NATS protocol
// binding, section 3.1.3.2 "NATS Header Values".

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	ce "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
)

// The spec's own example.
const (
	specExample        = "Euro € 😀"
	specExampleEncoded = "Euro%20%E2%82%AC%20%F0%9F%98%80"
)

func TestHeaderValueSpecExample(t *testing.T) {
	if got := bus.EncodeHeaderValue(specExample); got != specExampleEncoded {
		t.Errorf("EncodeHeaderValue(%q) = %q, want %q", specExample, got, specExampleEncoded)
	}
	got, err := bus.DecodeHeaderValue(specExampleEncoded)
	if err != nil || got != specExample {
		t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q", specExampleEncoded, got, err, specExample)
	}
	e := fullEvent(t)
	e.Subject = specExample
	e.SetExt("label", specExample)
	msg, err := bus.Encode("x", e)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ce-subject", "ce-label"} {
		if v := msg.Header.Get(k); v != specExampleEncoded {
			t.Errorf("header %s = %q, want %q", k, v, specExampleEncoded)
		}
	}
	back, err := bus.Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	assertSameEvent(t, back, e)
}

// TestHeaderValueEncodeClasses covers every character class the spec names:
// space, double quote and percent, the printable ASCII range U+0021-U+007E
// (left alone), and everything outside it, control characters included.
func TestHeaderValueEncodeClasses(t *testing.T) {
	tests := []struct{ in, want string }{
		{" ", "%20"},
		{`"`, "%22"},
		{"%", "%25"},
		{"100%", "100%25"},
		{"\x00", "%00"},
		{"\t", "%09"},
		{"\x1f", "%1F"},
		{"\x7f", "%7F"},
		{"\u0080", "%C2%80"},
		{"\u009f", "%C2%9F"},
		{"\u00a0", "%C2%A0"},
		{"é", "%C3%A9"},
		{"€", "%E2%82%AC"},
		{"😀", "%F0%9F%98%80"}, // outside the BMP: one character, four bytes
		{"a b", "a%20b"},
		{`say "hi"`, "say%20%22hi%22"},
	}
	for _, tt := range tests {
		if got := bus.EncodeHeaderValue(tt.in); got != tt.want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, err := bus.DecodeHeaderValue(tt.want); err != nil || got != tt.in {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q", tt.want, got, err, tt.in)
		}
	}
	var printable strings.Builder
	for c := byte(0x21); c <= 0x7e; c++ {
		if c != '"' && c != '%' {
			printable.WriteByte(c)
		}
	}
	if got := bus.EncodeHeaderValue(printable.String()); got != printable.String() {
		t.Errorf("printable ASCII was encoded: %q", got)
	}
}

func TestHeaderValueDecodeAccepts(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"unnecessary colon", "2026-01-02T15%3A04%3A05Z", "2026-01-02T15:04:05Z"},
		{"unnecessary letters", "%41%42c", "ABc"},
		{"everything encoded", "%6d%65%73%68%2e%72%65%73%75%6c%74", "mesh.result"},
		{"lower-case hex", "%e2%82%ac", "€"},
		{"mixed-case hex", "%E2%82%ac", "€"},
		{"spec example, lower case", strings.ToLower(specExampleEncoded), "euro € 😀"},
		{"double-quoted", `"a b"`, "a b"},
		{"double-quoted with escapes", `"say \"hi\" \\ \o/"`, `say "hi" \ o/`},
		{"double-quoted, then percent-decoded", `"Euro%20%E2%82%AC"`, "Euro €"},
		{"double-quoted empty", `""`, ""},
		{"optional whitespace around", " \tabc \t", "abc"},
		{"whitespace around quotes", ` "a b" `, "a b"},
		{"a raw space inside", "x y", "x y"},
		{"a plus stays a plus", "a+b", "a+b"},
		{"raw UTF-8", "€", "€"},
		{"no encoding at all", "io.agentmesh.task.completed", "io.agentmesh.task.completed"},
	}
	for _, tt := range tests {
		got, err := bus.DecodeHeaderValue(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%s: DecodeHeaderValue(%q) = %q, %v; want %q", tt.name, tt.in, got, err, tt.want)
		}
	}
}

func TestHeaderValueDecodeRejects(t *testing.T) {
	tests := []struct{ name, in, mention string }{
		{"overlong space (the spec's example)", "%C0%A0", "%C0%A0"},
		{"overlong slash", "a%C0%AFb", "%C0%AF"},
		{"overlong 3-byte", "%E0%80%AF", "%E0%80%AF"},
		{"overlong 4-byte euro", "%F0%82%82%AC", "%F0%82%82%AC"},
		{"encoded surrogate", "%ED%A0%80", "%ED%A0%80"},
		{"beyond U+10FFFF", "%F4%90%80%80", "%F4%90%80%80"},
		{"invalid byte FF", "x%FFy", "%FF"},
		{"invalid byte FE", "%fe", "%FE"},
		{"stray continuation byte", "%80", "%80"},
		{"truncated sequence", "%E2%82", "%E2%82"},
		{"truncated before ASCII", "%E2%82x", "%E2%82"},
		{"raw invalid UTF-8", "a\xffb", "%FF"},
		{"quoted invalid UTF-8", `"%C0%A0"`, "%C0%A0"},
		{"lone percent", "100%", `"%"`},
		{"one hex digit", "%4", `"%4"`},
		{"not hex", "%G1", `"%G1"`},
		{"percent then space", "% 20", `"% 2"`},
		{"unterminated quote", `"abc`, "does not end"},
		{"backslash at the end", `"abc\`, "backslash"},
		{"text after the closing quote", `"a"b`, `"b"`},
	}
	for _, tt := range tests {
		got, err := bus.DecodeHeaderValue(tt.in)
		if !errors.Is(err, bus.ErrInvalidAttribute) {
			t.Errorf("%s: DecodeHeaderValue(%q) = %q, %v; want an error wrapping ErrInvalidAttribute", tt.name, tt.in, got, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s: error %q does not mention %s", tt.name, err, tt.mention)
		}
	}
}

// encodeEverything percent-encodes every byte but letters and digits, in
// lower-case hex, as a sender that encodes far more than it must (say,
// JavaScript's encodeURIComponent plus more) would.
func encodeEverything(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + string(hex[c>>4]) + string(hex[c&0xf]))
	}
	return b.String()
}

// TestDecodeBinaryFullyEncoded is the case: a sender that encodes
// ':' in ce-time (and everything else) had every result refused with "time
// ... is not an RFC 3339 time".
func TestDecodeBinaryFullyEncoded(t *testing.T) {
	want := fullEvent(t)
	want.Subject = specExample + ` "quoted" 100%`
	plain, err := bus.Encode("mesh.result.t-1", want)
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(plain.Subject)
	msg.Data = plain.Data
	for k, vs := range plain.Header {
		v := vs[0]
		if strings.HasPrefix(k, "ce-") {
			dec, err := bus.DecodeHeaderValue(v)
			if err != nil {
				t.Fatal(err)
			}
			v = encodeEverything(dec)
		}
		msg.Header.Set(k, v)
	}
	if got := msg.Header.Get("ce-time"); !strings.Contains(got, "%3a") {
		t.Fatalf("ce-time %q is not encoded", got)
	}
	got, err := bus.Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	assertSameEvent(t, got, want)
}

func TestDecodeBinaryBadHeaderValue(t *testing.T) {
	msg := nats.NewMsg("mesh.result.t-1")
	for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "r-1", "ce-source": "agent",
		"ce-type": bus.TypeTaskCompleted, "ce-taskid": "t-1", "ce-subject": "bad%C0%A0", "ce-time": `"2026-01-02`} {
		msg.Header.Set(k, v)
	}
	e, err := bus.Decode(msg)
	if !errors.Is(err, bus.ErrInvalidAttribute) {
		t.Fatalf("err = %v, want ErrInvalidAttribute", err)
	}
	for _, m := range []string{"header ce-subject value", "%C0%A0", "header ce-time value", "does not end"} {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
	if errors.Is(err, bus.ErrMissingAttribute) || strings.Contains(err.Error(), "RFC 3339") {
		t.Errorf("error %q reports more than the bad values", err)
	}
	if e.ID != "r-1" || e.Ext(bus.ExtTaskID) != "t-1" {
		t.Errorf("the partial event lost its id or taskid: %+v", e)
	}
}

// sdkEvent is an sdk-go event with every attribute, and values of each
// class the binding names.
func sdkEvent(t *testing.T) ce.Event {
	t.Helper()
	ev := ce.New()
	ev.SetID("sdk-1 " + specExample)
	ev.SetSource("/sdk-go/agent")
	ev.SetType(bus.TypeTaskCompleted)
	ev.SetSubject(specExample + ` "quoted" 100%`)
	ev.SetDataSchema("https://example.com/schema.json")
	ev.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.FixedZone("", 2*3600)))
	ev.SetExtension(bus.ExtTaskID, "t-1")
	ev.SetExtension("label", "tab\there é")
	if err := ev.SetData(ce.ApplicationJSON, map[string]any{"success": true, "summary": specExample}); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestSDKBinaryToMesh: sdk-go writes the event in binary mode (its HTTP
// binding's header mapping), the header values are percent-encoded the way
// the NATS binding asks, and the mesh decodes the same event.
func TestSDKBinaryToMesh(t *testing.T) {
	want := sdkEvent(t)
	req, _ := http.NewRequest(http.MethodPost, "http://x", nil)
	if err := cehttp.WriteRequest(context.Background(), binding.ToMessage(&want), req); err != nil {
		t.Fatal(err)
	}
	for _, enc := range []struct {
		name string
		fn   func(string) string
	}{{"as the spec says", bus.EncodeHeaderValue}, {"lower-case, everything encoded", encodeEverything}} {
		msg := nats.NewMsg("mesh.result.t-1")
		for k, vs := range req.Header {
			v := vs[0]
			if strings.HasPrefix(strings.ToLower(k), "ce-") {
				v = enc.fn(v)
			}
			msg.Header.Set(k, v)
		}
		msg.Data = want.Data()
		got, err := bus.Decode(msg)
		if err != nil {
			t.Fatalf("%s: %v", enc.name, err)
		}
		assertSDKEvent(t, &want, got)
	}
}

// TestMeshBinaryToSDK: the mesh encodes, a NATS-to-HTTP gateway undoes the
// percent-encoding with net/url, and sdk-go reads the same event.
func TestMeshBinaryToSDK(t *testing.T) {
	src := sdkEvent(t)
	want, err := bus.Decode(func() *nats.Msg {
		req, _ := http.NewRequest(http.MethodPost, "http://x", nil)
		if err := cehttp.WriteRequest(context.Background(), binding.ToMessage(&src), req); err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg("x")
		for k, vs := range req.Header {
			m.Header.Set(k, bus.EncodeHeaderValue(vs[0]))
		}
		m.Header.Set("Content-Type", src.DataContentType())
		m.Data = src.Data()
		return m
	}())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode("mesh.result.t-1", want)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range msg.Header {
		for i := 0; i < len(vs[0]); i++ {
			if c := vs[0][i]; c <= ' ' || c >= 0x7f || c == '"' {
				t.Errorf("header %s = %q holds %q, which the binding percent-encodes", k, vs[0], c)
			}
		}
	}
	m := cehttp.NewMessage(natsToHTTP(t, msg.Header), io.NopCloser(bytes.NewReader(msg.Data)))
	got, err := binding.ToEvent(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	assertSDKEvent(t, got, want)
	if got.ID() != src.ID() || got.Subject() != src.Subject() || got.Extensions()["label"] != "tab\there é" {
		t.Errorf("sdk-go read %v, want %v", got, src)
	}
}
