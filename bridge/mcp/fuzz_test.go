package mcp_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/schemas"
)

var fuzzContract = schemas.AgentContract{
	Name: "FuzzAgent", Capability: schemas.CapAnalysis, Description: "fuzz",
	Inputs: []schemas.TypedInput{
		{Name: "text", DataType: schemas.TypeText},
		{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: "images"},
		{Name: "cats", DataType: schemas.TypeCategorization},
		{Name: "both", DataType: schemas.TypeText},
	},
	Params: json.RawMessage(`{"type":"object","properties":{"top":{"type":"integer"},"both":{"type":"string"}}}`),
}

// FuzzTaskFromArgs feeds tool-call arguments, as an MCP client sends them,
// to the split into a task: it never panics, refuses what is not an
// object, and puts every key in exactly one of inputs and params.
func FuzzTaskFromArgs(f *testing.F) {
	for _, s := range []string{`{}`, `null`, ``, `{"text":"hi","top":3}`, `{"images":["f-1","f-2"]}`, `{"images":{"ids":["f-1"]}}`,
		`{"text":5}`, `{"cats":{"categories":{}}}`, `{"both":"x"}`, `[1]`, `"s"`, `{"a":1e400}`, `{"text":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		task, err := meshmcp.TaskFromArgs(fuzzContract, raw)
		if err != nil {
			if !errors.Is(err, meshmcp.ErrBadArguments) && !errors.Is(err, meshmcp.ErrBadInput) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		for k, v := range task.Inputs {
			in, ok := fuzzContract.Input(k)
			if !ok || k == "both" || v.DataType != in.DataType {
				t.Fatalf("input %q (%s) is not a declared input of that type", k, v.DataType)
			}
			if _, dup := task.Params[k]; dup {
				t.Fatalf("%q is both an input and a param", k)
			}
		}
	})
}

// FuzzToolContract derives contracts from tool definitions as an MCP
// server lists them: it never panics, and a contract it returns passes
// validation under a valid agent name.
func FuzzToolContract(f *testing.F) {
	f.Add("word_count", []byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`), true)
	f.Add("a.b/c", []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`), false)
	f.Add("", []byte(`{}`), false)
	f.Add("x", []byte(`{"type":"object","properties":{"t":{"type":"string"}},"required":[5,"t"]}`), true)
	f.Add("y", []byte(`{"type":"object","properties":"nope","required":"t"}`), false)
	f.Add("z", []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`), false)
	f.Fuzz(func(t *testing.T, name string, schema []byte, withOutput bool) {
		var in any
		if json.Unmarshal(schema, &in) != nil {
			return
		}
		tool := &mcp.Tool{Name: name, InputSchema: in}
		if withOutput {
			tool.OutputSchema = map[string]any{"type": "object"}
		}
		c, text, err := meshmcp.ToolContract(tool, "p_")
		if err != nil {
			return
		}
		if verr := c.Validate(); verr != nil {
			t.Fatalf("contract of %q fails validation: %v", name, verr)
		}
		if text.Argument != "" && (len(c.Inputs) != 1 || c.Inputs[0].Name != text.Argument) {
			t.Fatalf("text argument %q but inputs %+v", text.Argument, c.Inputs)
		}
	})
}

// FuzzSplitCommand splits --mcp command lines: it never panics, and a
// line without quotes or backslashes splits as strings.Fields does.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{`node server.mjs`, `node 'my server.mjs' --x "a b"`, `a\ b`, `'unclosed`, `"`, `\`, ``, "a\tb\nc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := meshmcp.SplitCommand(line)
		if err != nil {
			return
		}
		if !strings.ContainsAny(line, `'"\`) && !strings.ContainsAny(line, "\r\v\f\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000") {
			if want := strings.Fields(line); !slices.Equal(words, want) && !(len(words) == 0 && len(want) == 0) {
				t.Fatalf("SplitCommand(%q) = %q, want %q", line, words, want)
			}
		}
	})
}
