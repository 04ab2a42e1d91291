package a2a

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	cases := []struct {
		body string
		code int    // 0: decodes
		id   string // the id the answer carries
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t"}}`, 0, "7"},
		{`{"jsonrpc":"2.0","id":"a","method":"GetTask"}`, 0, `"a"`},
		{`{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{}}`, 0, "null"},
		{`{"jsonrpc":"2.0","method":"GetTask","params":{}}`, 0, "null"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"GetTask"}`, CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":3,"method":""}`, CodeInvalidRequest, "3"},
		{`{"jsonrpc":"2.0","id":3,"method":5}`, CodeInvalidRequest, "3"},
		{`{"id":3,"method":"GetTask"}`, CodeInvalidRequest, "3"},
		{`{"jsonrpc":"2.0","id":3,"method":"GetTask","params":"x"}`, CodeInvalidParams, "3"},
		{`[{"jsonrpc":"2.0","id":3,"method":"GetTask"}]`, CodeInvalidRequest, "null"},
		{`null`, CodeParseError, "null"},
		{`{"jsonrpc":"2.0",`, CodeParseError, "null"},
		{``, CodeParseError, "null"},
	}
	for _, c := range cases {
		req, rerr := DecodeRequest([]byte(c.body))
		code := 0
		if rerr != nil {
			code = rerr.Code
		}
		if code != c.code || string(req.ID) != c.id {
			t.Errorf("%s: code %d id %s, want code %d id %s (%v)", c.body, code, req.ID, c.code, c.id, rerr)
		}
	}
}

// FuzzDecodeRequest checks that any body either decodes into a request
// that holds what a handler relies on, or is answered with a JSON-RPC
// error whose response is valid JSON.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"t"}}`,
		`[1]`, `{}`, `{"id":1e3}`, `{"jsonrpc":"2.0","id":-0,"method":"m","params":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, rerr := DecodeRequest(body)
		if !json.Valid(req.ID) || !validID(req.ID) {
			t.Fatalf("id %q is no valid JSON-RPC id", req.ID)
		}
		if rerr != nil {
			b, err := json.Marshal(Response{JSONRPC: "2.0", ID: req.ID, Error: rerr})
			if err != nil || !json.Valid(b) {
				t.Fatalf("the error response does not encode: %v", err)
			}
			return
		}
		if req.JSONRPC != "2.0" || req.Method == "" {
			t.Fatalf("decoded %+v", req)
		}
		if req.Params != nil && (!json.Valid(req.Params) || !bytes.HasPrefix(req.Params, []byte("{"))) {
			t.Fatalf("params %q is not an object", req.Params)
		}
		var p SendMessageRequest
		_ = json.Unmarshal(req.Params, &p) // must not panic
		if lr, err := fromLegacy(req); err == nil && lr.Params != nil && !json.Valid(lr.Params) {
			t.Fatalf("the 0.3 request became invalid params %q", lr.Params)
		}
	})
}

// FuzzParseCard checks that a remote card either yields an endpoint of a
// version the client speaks, or an error.
func FuzzParseCard(f *testing.F) {
	v1, _ := json.Marshal(CardFor(twoInputs, "http://h/a"))
	old, _ := json.Marshal(legacyCard(CardFor(twoInputs, "http://h/a")))
	for _, s := range [][]byte{v1, old, []byte(`{"url":"x"}`), []byte(`{"supportedInterfaces":[{}]}`), []byte(`[]`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		card, ep, legacy, err := parseCard(body)
		if err != nil {
			return
		}
		if ep == "" {
			t.Fatalf("no error and no endpoint for %s", body)
		}
		found := false
		for _, in := range card.SupportedInterfaces {
			found = found || (in.URL == ep && (in.ProtocolVersion == ProtocolVersion) != legacy)
		}
		if !found {
			t.Fatalf("endpoint %q (legacy %v) is not among %+v", ep, legacy, card.SupportedInterfaces)
		}
	})
}

// The ProtoJSON forms a reader must take: enums by number, bytes in any
// base64 alphabet, padded or not.
func TestProtoJSONForms(t *testing.T) {
	var m Message
	if err := json.Unmarshal([]byte(`{"messageId":"m","role":1,"parts":[{"raw":"_-8"},{"raw":"/+8="}]}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.Role != RoleUser || string(m.Parts[0].Raw) != "\xff\xef" || string(m.Parts[1].Raw) != "\xff\xef" {
		t.Fatalf("decoded %+v", m)
	}
	var st TaskStatus
	if err := json.Unmarshal([]byte(`{"state":6}`), &st); err != nil || st.State != StateInputRequired {
		t.Fatalf("state %q, %v", st.State, err)
	}
	if err := json.Unmarshal([]byte(`{"state":42}`), &st); err == nil {
		t.Fatal("an unknown enum number decoded")
	}
	b, _ := json.Marshal(Part{Raw: Bytes("\xff\xef")})
	if string(b) != `{"raw":"/+8="}` {
		t.Fatalf("encoded %s", b)
	}
}

func TestParseCardPicksAnInterface(t *testing.T) {
	v1 := CardFor(twoInputs, "http://h/a2a/agents/Mixer")
	b, _ := json.Marshal(v1)
	if _, ep, legacy, err := parseCard(b); err != nil || legacy || ep != "http://h/a2a/agents/Mixer" {
		t.Fatalf("1.0 card: %q legacy=%v %v", ep, legacy, err)
	}
	b, _ = json.Marshal(legacyCard(v1))
	card, ep, legacy, err := parseCard(b)
	if err != nil || !legacy || ep != "http://h/a2a/agents/Mixer" || card.Name != "Mixer" || len(card.Skills) != 1 {
		t.Fatalf("0.3 card: %+v %q legacy=%v %v", card, ep, legacy, err)
	}
	only03 := `{"name":"X","description":"d","version":"1","supportedInterfaces":[{"url":"http://o","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`
	if _, ep, legacy, err := parseCard([]byte(only03)); err != nil || !legacy || ep != "http://o" {
		t.Fatalf("1.0 form, 0.3 interface: %q %v %v", ep, legacy, err)
	}
	grpc := `{"name":"X","supportedInterfaces":[{"url":"http://g","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`
	if _, _, _, err := parseCard([]byte(grpc)); err == nil || !strings.Contains(err.Error(), "GRPC 1.0") {
		t.Fatalf("a gRPC-only card: %v", err)
	}
}
