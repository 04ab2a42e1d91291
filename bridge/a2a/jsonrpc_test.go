package a2a

import (
	"bytes"
	"encoding/json"
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
