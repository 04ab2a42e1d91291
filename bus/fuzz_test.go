package bus_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
	"github.com/agentmesh/agentmesh/schemas"
)

// fuzzMsg builds a message from the fuzz input: headers is a block of
// "Key: value" lines (lines without ':' are skipped), body is the payload.
func fuzzMsg(headers string, body []byte) *nats.Msg {
	m := &nats.Msg{Subject: "fuzz", Data: body}
	for line := range strings.SplitSeq(headers, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		m.Header.Add(k, strings.TrimPrefix(v, " "))
	}
	return m
}

// FuzzDecode checks that Decode never panics and that an event it accepts
// comes back the same after encoding it again, in binary mode (when the event
// fits in headers) and in structured mode.
func FuzzDecode(f *testing.F) {
	f.Add("ce-specversion: 1.0\nce-id: 42\nce-source: agentmesh/cli\nce-type: io.agentmesh.task.requested\n"+
		"ce-time: 2026-01-02T03:04:05.123Z\nce-replyto: mesh.result.t1\nce-deadline: 2026-01-02T03:05:05Z\nContent-Type: application/json",
		benchsuite.TaskData)
	f.Add("Content-Type: application/cloudevents+json",
		[]byte(`{"specversion":"1.0","id":"1","source":"s","type":"t","time":"2026-01-01T00:00:00+02:00","conversationid":"c","n":1.5,"b":false,"data":{"message":"hi"}}`))
	f.Add("", []byte(`{"specversion":"1.0","id":"1","source":"s","type":"t","datacontenttype":"text/plain","data":"hello"}`))
	f.Add("", []byte(`{"specversion":"1.0","id":"1","source":"s","type":"t","data_base64":"AAEC"}`))
	f.Add("CE-ID: x\nce-Source: y\nCe-Type: z\nce-specversion: 1.0\ncontent-type: text/plain", []byte("plain body"))
	f.Add("", []byte("\x00\xff garbage {"))
	f.Add("Content-Type: application/cloudevents+json", []byte(`{"specversion":`))
	f.Add("ce-specversion: 0.3\nce-id: 1", []byte(nil))
	f.Add("ce-specversion: 1.0\nce-id: %41\nce-source: \"a b\"\nce-type: t\nce-time: 2026-01-02T03%3a04%3a05Z\nce-subject: Euro%20%E2%82%AC", []byte(nil))
	f.Add("ce-specversion: 1.0\nce-id: 1\nce-source: s\nce-type: t\nce-subject: %C0%A0", []byte(nil))

	f.Fuzz(func(t *testing.T, headers string, body []byte) {
		e1, err := bus.Decode(fuzzMsg(headers, body))
		if err != nil {
			if !isDecodeSentinel(err) {
				t.Fatalf("Decode error wraps no sentinel: %v", err)
			}
			return
		}
		if msg, err := bus.Encode("fuzz", e1); err == nil {
			e2, err := bus.Decode(msg)
			if err != nil {
				t.Fatalf("binary re-decode of %+v: %v", e1, err)
			}
			sameFuzzEvent(t, "binary", e1, e2)
		} else if !errors.Is(err, bus.ErrInvalidAttribute) {
			t.Fatalf("Encode of a decoded event: %v", err)
		}
		msg, err := bus.EncodeStructured("fuzz", e1)
		if err != nil {
			t.Fatalf("EncodeStructured of a decoded event: %v", err)
		}
		e3, err := bus.Decode(msg)
		if err != nil {
			t.Fatalf("structured re-decode of %+v from %s: %v", e1, msg.Data, err)
		}
		sameFuzzEvent(t, "structured", e1, e3)
	})
}

func isDecodeSentinel(err error) bool {
	for _, s := range []error{bus.ErrMalformedEvent, bus.ErrMissingAttribute, bus.ErrSpecVersion, bus.ErrInvalidAttribute} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func sameFuzzEvent(t *testing.T, mode string, a, b bus.Event) {
	t.Helper()
	if a.ID != b.ID || a.Source != b.Source || a.Type != b.Type || a.Subject != b.Subject ||
		a.SpecVersion != b.SpecVersion || a.DataContentType != b.DataContentType || a.DataSchema != b.DataSchema {
		t.Fatalf("%s: attributes differ:\n %+v\n %+v", mode, a, b)
	}
	if !a.Time.Equal(b.Time) {
		t.Fatalf("%s: time %v != %v", mode, a.Time, b.Time)
	}
	if !bytes.Equal(a.Data, b.Data) {
		t.Fatalf("%s: data %q != %q", mode, a.Data, b.Data)
	}
	if len(a.Extensions) != len(b.Extensions) {
		t.Fatalf("%s: extensions %v != %v", mode, a.Extensions, b.Extensions)
	}
	for k, v := range a.Extensions {
		if b.Extensions[k] != v {
			t.Fatalf("%s: extension %s %q != %q", mode, k, v, b.Extensions[k])
		}
	}
}

// FuzzDecodeHeaderValue checks that DecodeHeaderValue never panics, that
// what it accepts is UTF-8 and comes back from EncodeHeaderValue in printable
// ASCII with no space or double quote, and that any UTF-8 string survives
// EncodeHeaderValue then DecodeHeaderValue.
func FuzzDecodeHeaderValue(f *testing.F) {
	for _, s := range []string{"Euro%20%E2%82%AC%20%F0%9F%98%80", "2026-01-02T15%3a04%3a05Z", `"say \"hi\" %25"`,
		"%C0%A0", "%ED%A0%80", "%E2%82", "100%", "%g0", `"open`, `"a"b`, " x y ", "\xff", "Euro € 😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) {
			enc := bus.EncodeHeaderValue(s)
			if back, err := bus.DecodeHeaderValue(enc); err != nil || back != s {
				t.Fatalf("%q encoded as %q decodes to %q, %v", s, enc, back, err)
			}
		}
		dec, err := bus.DecodeHeaderValue(s)
		if err != nil {
			if !errors.Is(err, bus.ErrInvalidAttribute) {
				t.Fatalf("error wraps no ErrInvalidAttribute: %v", err)
			}
			return
		}
		if !utf8.ValidString(dec) {
			t.Fatalf("%q decoded to invalid UTF-8 %q", s, dec)
		}
		enc := bus.EncodeHeaderValue(dec)
		for i := 0; i < len(enc); i++ {
			if c := enc[i]; c <= ' ' || c >= 0x7f || c == '"' {
				t.Fatalf("EncodeHeaderValue(%q) = %q holds %q", dec, enc, c)
			}
		}
		if back, err := bus.DecodeHeaderValue(enc); err != nil || back != dec {
			t.Fatalf("%q re-encoded as %q decodes to %q, %v", dec, enc, back, err)
		}
	})
}

// FuzzParseUser: a user name from a credentials file either names an
// identity that round-trips, or is refused.
func FuzzParseUser(f *testing.F) {
	for _, s := range []string{"agent-TextAgent", "client-alice", "admin", "orchestrator", "agent-", "x-y-z", "client-a.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, user string) {
		id, err := bus.ParseUser(user)
		if err != nil {
			return
		}
		if id.User() != user || id.Validate() != nil {
			t.Fatalf("%q parsed to %+v, which is %q", user, id, id.User())
		}
	})
}

// FuzzRolloutMapping: whatever a rollouts bucket value holds, decoding it
// and mapping it either fails with an error or maps mesh.task.<agent>
// onto one or two version subjects of that agent whose weights add up to
// 100, each a valid subject with no wildcard.
func FuzzRolloutMapping(f *testing.F) {
	f.Add([]byte(`{"agent":"Echo","from":"1.0.0","to":"2.0.0","weight":10}`))
	f.Add([]byte(`{"agent":"Echo","from":"1.0.0","to":"2.0.0","weight":100,"shadow":true}`))
	f.Add([]byte(`{"agent":"Echo","from":"1_0","to":"1.*","weight":-3}`))
	f.Add([]byte(`{"agent":"a.b","from":"","to":">","weight":50}`))
	n := bus.MustNames("")
	f.Fuzz(func(t *testing.T, data []byte) {
		var r schemas.Rollout
		if json.Unmarshal(data, &r) != nil {
			return
		}
		src, to, err := n.RolloutMapping(r)
		if err != nil {
			return
		}
		if src != "mesh.task."+r.Agent {
			t.Fatalf("%+v maps %q", r, src)
		}
		sum := 0
		for _, d := range to {
			sum += d.Percent
			if !strings.HasPrefix(d.Subject, src+".v.") || strings.ContainsAny(d.Subject, "*> \t") || strings.Count(d.Subject, ".") != 4 {
				t.Fatalf("%+v maps onto %q", r, d.Subject)
			}
		}
		if sum != 100 || len(to) < 1 || len(to) > 2 {
			t.Fatalf("%+v maps onto %v (weights add up to %d)", r, to, sum)
		}
	})
}
