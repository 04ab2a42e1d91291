package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

// memFiles is a FileStore in memory for the mapping's table test.
type memFiles struct{ stored []string }

func (m *memFiles) Store(_ context.Context, r io.Reader, mediaType string, meta map[string]string) (schemas.FileRef, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return schemas.FileRef{}, err
	}
	id := fmt.Sprintf("f-%d", len(m.stored)+1)
	m.stored = append(m.stored, string(b))
	return schemas.FileRef{ID: id, MediaType: mediaType, Filename: meta[metaFilename], Size: int64(len(b))}, nil
}

func (m *memFiles) Open(_ context.Context, id string) (io.ReadCloser, schemas.FileRef, error) {
	var n int
	if _, err := fmt.Sscanf(id, "f-%d", &n); err != nil || n < 1 || n > len(m.stored) {
		return nil, schemas.FileRef{}, fmt.Errorf("no file %s", id)
	}
	return io.NopCloser(strings.NewReader(m.stored[n-1])), schemas.FileRef{ID: id}, nil
}

func TestRemoteAnswerOntoOutputs(t *testing.T) {
	mem := &memFiles{}
	r := &Remote{contract: schemas.AgentContract{Name: "R"}, files: mem}
	out, summary, err := r.outputs(context.Background(), []Part{
		TextPart("a"), {Raw: []byte("x"), Filename: "f.txt"}, {URL: "http://u/g", Filename: "g"}, {Data: []byte(`{"k":1}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := out["text"].Text()
	fc, _ := out["files"].Files()
	if text != "a\n[file \"g\" at http://u/g]\n{\"k\":1}" || fc.Count() != 1 || mem.stored[0] != "x" || !strings.HasSuffix(summary, "(1 files)") {
		t.Fatalf("text %q, files %v, summary %q", text, fc.IDs(), summary)
	}
	r.files = nil // without a store, file bytes are named in the text
	out, _, _ = r.outputs(context.Background(), []Part{{Raw: []byte("xy"), Filename: "f.txt", MediaType: "text/plain"}})
	if text, _ := out["text"].Text(); text != `[file "f.txt", text/plain, 2 bytes]` || out["files"].Value != nil {
		t.Fatalf("without files: %+v", out)
	}
}

var twoInputs = schemas.AgentContract{
	Name: "Mixer", Capability: schemas.CapTransformation, Description: "mixes",
	Inputs: []schemas.TypedInput{
		{Name: "text", DataType: schemas.TypeText, Required: true},
		{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: "images"},
		{Name: "note", DataType: schemas.TypeText},
	},
	Params: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`),
}

func meta(input string) map[string]any { return map[string]any{MetaInput: input} }

func TestPartsMapOntoInputs(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		name  string
		parts []Part
		want  string // inputs and params as "k=v" sorted, or the error's text
		files int    // files stored
	}{
		{"named text parts", []Part{{Text: str("a"), Metadata: meta("text")}, {Text: str("b"), Metadata: meta("note")}}, `text="a" note="b"`, 0},
		{"plain text fills the required TEXT input", []Part{{Text: str("hello")}}, `text="hello"`, 0},
		{"plain text beside a set input is the instruction", []Part{{Data: []byte(`{"text":"x","note":"y"}`)}, {Text: str("do it")}}, `text="x" note="y" instruction=do it`, 0},
		{"data part with params", []Part{{Text: str("t")}, {Data: []byte(`{"params":{"n":2}}`)}}, `text="t" params=map[n:2]`, 0},
		{"file ids as an array", []Part{{Text: str("t")}, {Data: []byte(`["f-a","f-b"]`), Metadata: meta("images")}}, `text="t" images={"ids":["f-a","f-b"],"content_type":"images","count":2}`, 0},
		{"raw parts are stored", []Part{{Text: str("t")}, {Raw: []byte("png"), Filename: "a.png"}}, `text="t" images={"ids":["f-1"],"content_type":"images","count":1}`, 1},
		{"missing required input", []Part{{Text: str("n"), Metadata: meta("note")}}, "needs input text (TEXT)", 0},
		{"unknown input named", []Part{{Text: str("x"), Metadata: meta("nope")}}, `names input "nope"`, 0},
		{"input twice", []Part{{Text: str("a"), Metadata: meta("text")}, {Data: []byte(`{"text":"b"}`)}}, `input "text" is given twice`, 0},
		{"bytes into a TEXT input", []Part{{Raw: []byte("x"), Metadata: meta("text")}}, "not FILE_IDS", 0},
		{"a bad value for its type", []Part{{Data: []byte(`5`), Metadata: meta("text")}}, `input "text" (TEXT)`, 0},
		{"params failing the schema store no file", []Part{{Text: str("t")}, {Raw: []byte("png")}, {Data: []byte(`{"params":{"n":"two"}}`)}}, "/n", 0},
		{"a data part that is no object", []Part{{Data: []byte(`[1]`)}}, "must be an object", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := &memFiles{}
			task, err := taskFromMessage(context.Background(), twoInputs, &Message{Parts: c.parts}, fs)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrInvalidParams) {
					t.Errorf("error %v does not wrap ErrInvalidParams", err)
				}
			} else {
				got = describe(task)
			}
			if !strings.Contains(got, c.want) || (err == nil && got != c.want) {
				t.Errorf("got %s\nwant %s", got, c.want)
			}
			if len(fs.stored) != c.files {
				t.Errorf("stored %d files, want %d", len(fs.stored), c.files)
			}
		})
	}
}

func describe(task schemas.TaskRequest) string {
	var out []string
	for _, in := range twoInputs.Inputs {
		if v, ok := task.Inputs[in.Name]; ok {
			out = append(out, in.Name+"="+string(v.Value))
		}
	}
	if task.Instruction != "" {
		out = append(out, "instruction="+task.Instruction)
	}
	if task.Params != nil {
		out = append(out, fmt.Sprintf("params=%v", task.Params))
	}
	return strings.Join(out, " ")
}

func TestCardsOfContractsAndContractsOfCards(t *testing.T) {
	card := CardFor(twoInputs, "http://x/a2a/agents/Mixer")
	if card.Version != "0.0.0" || card.Skills[0].ID != "Mixer" {
		t.Fatalf("card %+v", card)
	}
	if got := strings.Join(card.DefaultInputModes, ","); got != "text/plain,application/json,image/*" {
		t.Errorf("input modes %s", got)
	}
	c := ContractFromCard(AgentCard{Name: "Word Reverser!", Version: "v2", Skills: []AgentSkill{{Name: "rev", Description: "reverses", Examples: []string{"a b"}}}}, "", "GENERATION")
	if c.Name != "WordReverser" || c.Version != "" || !strings.Contains(c.Description, `Skill rev: reverses (e.g. "a b")`) {
		t.Fatalf("contract %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
