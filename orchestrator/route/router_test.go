package route_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/internal/fixture"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestRouterTable(t *testing.T) {
	r := route.NewRouter()
	cases := []struct {
		dataType, hint, slot string
		routed               bool
	}{
		{schemas.TypeFileIDs, schemas.ContentImages, route.SlotImageIDs, true},
		{schemas.TypeFileIDs, schemas.ContentDocuments, route.SlotDocumentIDs, true},
		{schemas.TypeFileIDs, schemas.ContentLinks, route.SlotLinkIDs, true},
		{schemas.TypeFileIDs, schemas.ContentMixed, route.SlotFileIDs, true},
		{schemas.TypeFileIDs, "", route.SlotFileIDs, true},
		{schemas.TypeFileIDs, "audio", route.SlotFileIDs, true},
		{schemas.TypeCategorization, "", route.SlotCategorization, true},
		{schemas.TypeAnalysisResult, "", route.SlotAnalysis, true},
		{schemas.TypeText, "", route.SlotText, true},
		{schemas.TypeCrossRef, "", route.SlotCrossRef, true},
		{schemas.TypeFolderResult, "", "", false},
		{"CUSTOM", "", "", false},
	}
	for _, c := range cases {
		slot, ok := r.SlotFor(c.dataType, c.hint)
		if slot != c.slot || ok != c.routed {
			t.Errorf("SlotFor(%s, %q) = %q, %v; want %q, %v", c.dataType, c.hint, slot, ok, c.slot, c.routed)
		}
	}
}

var producer = schemas.AgentContract{Name: "P", Capability: schemas.CapSearch, Description: "p",
	Outputs: []schemas.TypedOutput{
		{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Mergeable: true},
		{Name: "docs", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentDocuments},
		{Name: "folders", DataType: schemas.TypeFolderResult},
		{Name: "score", DataType: "SCORE"},
	}}

func TestRouterApplyMergesOnlyMergeableAndIsIdempotent(t *testing.T) {
	r := route.NewRouter()
	st := schemas.NewConversationState("c")
	ctx := context.Background()
	res := func(outs map[string]schemas.TypedValue) schemas.AgentResult {
		return schemas.AgentResult{Success: true, Agent: "P", Summary: "s", Outputs: outs}
	}
	folders, _ := schemas.NewValue(schemas.TypeFolderResult, schemas.FolderResult{Folders: map[string][]string{"a": {"1"}}}, "")
	if changed, err := r.Apply(ctx, st, producer, "t1", res(map[string]schemas.TypedValue{
		"images": fixture.Files(schemas.ContentImages, "i1", "i2"), "docs": fixture.Files(schemas.ContentDocuments, "d1"), "folders": folders,
	})); err != nil || !changed {
		t.Fatalf("first apply: %v %v", changed, err)
	}
	if changed, _ := r.Apply(ctx, st, producer, "t1", res(map[string]schemas.TypedValue{"images": fixture.Files(schemas.ContentImages, "zzz")})); changed {
		t.Fatal("the same task applied twice")
	}
	if _, err := r.Apply(ctx, st, producer, "t2", res(map[string]schemas.TypedValue{
		"images": fixture.Files(schemas.ContentImages, "i2", "i3"), "docs": fixture.Files(schemas.ContentDocuments, "d2"),
	})); err != nil {
		t.Fatal(err)
	}
	img, _ := st.Slots[route.SlotImageIDs].Files()
	if got := img.IDs(); !slices.Equal(got, []string{"i1", "i2", "i3"}) {
		t.Errorf("mergeable images: %v, want merged i1 i2 i3", got)
	}
	doc, _ := st.Slots[route.SlotDocumentIDs].Files()
	if got := doc.IDs(); !slices.Equal(got, []string{"d2"}) {
		t.Errorf("non-mergeable docs: %v, want replaced by d2", got)
	}
	if st.Slots[route.SlotImageIDs].Source != "P" {
		t.Errorf("source %q, want P", st.Slots[route.SlotImageIDs].Source)
	}
	if v, ok := st.History[0].Outputs["folders"]; !ok || v.DataType != schemas.TypeFolderResult {
		t.Errorf("FOLDER_RESULT not in history: %+v", st.History[0])
	}
	if len(st.History) != 2 || !slices.Equal(st.AppliedTasks, []string{"t1", "t2"}) {
		t.Errorf("history %d entries, applied %v", len(st.History), st.AppliedTasks)
	}
	// A failed result only adds history.
	before := len(st.Slots)
	r.Apply(ctx, st, producer, "t3", schemas.Failure("P", schemas.CodeAgentError, "boom", false))
	if len(st.Slots) != before || st.History[2].Text == "" {
		t.Errorf("failed result changed slots or left no history: %+v", st.History[2])
	}
}

func TestRouterCustomTypeRegistersItsSlot(t *testing.T) {
	reg := schemas.NewRegistry()
	if err := reg.Register(schemas.DataType{Name: "SCORE", Description: "a score",
		Schema: json.RawMessage(`{"type":"number"}`)}); err != nil {
		t.Fatal(err)
	}
	r := route.NewRouter(route.WithDataTypes(reg))
	st := schemas.NewConversationState("c")
	score := schemas.TypedValue{DataType: "SCORE", Value: json.RawMessage(`0.9`)}
	r.Apply(context.Background(), st, producer, "t1", schemas.AgentResult{Success: true, Agent: "P", Outputs: map[string]schemas.TypedValue{"score": score}})
	if _, ok := st.Slots["current_score"]; ok || st.History[0].Outputs["score"].DataType != "SCORE" {
		t.Fatalf("unregistered custom type: slots %v, history %+v", st.Slots, st.History[0])
	}
	if err := r.RegisterSlot("SCORE", "", "current_score"); err != nil {
		t.Fatal(err)
	}
	r.Apply(context.Background(), st, producer, "t2", schemas.AgentResult{Success: true, Agent: "P", Outputs: map[string]schemas.TypedValue{"score": score}})
	if v := st.Slots["current_score"]; string(v.Value) != "0.9" {
		t.Errorf("custom slot: %+v", v)
	}
	if err := r.RegisterSlot("NOPE", "", "x"); err == nil {
		t.Error("registering a slot for an unknown type succeeded")
	}
	bad := schemas.TypedValue{DataType: "SCORE", Value: json.RawMessage(`"high"`)}
	r.Apply(context.Background(), st, producer, "t3", schemas.AgentResult{Success: true, Agent: "P", Outputs: map[string]schemas.TypedValue{"score": bad}})
	if v := st.Slots["current_score"]; string(v.Value) != "0.9" {
		t.Errorf("an invalid value was routed: %+v", v)
	}
}

// An agent declares its own data type in its contract: the router learns
// it, validates values against the declared schema, merges them by the
// declared rule and routes them into the declared type's slot.
func TestRouterLearnsDeclaredTypes(t *testing.T) {
	counter := schemas.AgentContract{Name: "Counter", Capability: "ANALYSIS", Description: "counts words",
		DataTypes: []schemas.DataTypeDefinition{{Name: "WORD_FREQUENCIES", Description: "word counts", Merge: "sum",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"integer","minimum":1}}`)}},
		Outputs: []schemas.TypedOutput{{Name: "freq", DataType: "WORD_FREQUENCIES", Mergeable: true}}}
	if err := counter.ValidateWith(schemas.NewRegistry()); err != nil {
		t.Fatalf("a contract using its own declared type: %v", err)
	}
	r := route.NewRouter()
	ctx := context.Background()
	st := schemas.NewConversationState("c")
	result := func(v string) schemas.AgentResult {
		return schemas.AgentResult{Success: true, Agent: "Counter", Outputs: map[string]schemas.TypedValue{
			"freq": {DataType: "WORD_FREQUENCIES", Value: json.RawMessage(v)}}}
	}
	r.Apply(ctx, st, counter, "t1", result(`{"sun":2,"sea":1}`))
	r.Apply(ctx, st, counter, "t2", result(`{"sun":1,"sky":4}`))
	got := st.Slots["current_word_frequencies"]
	var m map[string]int
	if err := json.Unmarshal(got.Value, &m); err != nil || m["sun"] != 3 || m["sea"] != 1 || m["sky"] != 4 {
		t.Fatalf("current_word_frequencies = %s (%v), want the sum of both results", got.Value, err)
	}
	if err := r.DataTypes().Validate("WORD_FREQUENCIES", got.Value); err != nil {
		t.Errorf("the merge fails the declared schema: %v", err)
	}
	// A forged value (a count of 0) is kept out of the slot; history says why.
	r.Apply(ctx, st, counter, "t3", result(`{"sun":0}`))
	if string(st.Slots["current_word_frequencies"].Value) != string(got.Value) {
		t.Errorf("a value failing the declared schema changed the slot: %s", st.Slots["current_word_frequencies"].Value)
	}
	if h := st.History[len(st.History)-1].Text; !strings.Contains(h, `output "freq" not routed`) || !strings.Contains(h, "minimum") {
		t.Errorf("history of the forged value: %q", h)
	}
	// Another agent declaring the same name differently is refused, and
	// its values are not routed; the history names the conflict.
	rival := counter
	rival.Name = "Rival"
	rival.DataTypes = []schemas.DataTypeDefinition{{Name: "WORD_FREQUENCIES", Description: "word counts", Merge: "object", Schema: json.RawMessage(`true`)}}
	if err := r.Declare(rival); !errors.Is(err, route.ErrDeclaration) || !strings.Contains(err.Error(), "differs from the one Counter declared") {
		t.Errorf("rival declaration: %v", err)
	}
	r.Apply(ctx, st, rival, "t4", schemas.AgentResult{Success: true, Agent: "Rival", Outputs: map[string]schemas.TypedValue{
		"freq": {DataType: "WORD_FREQUENCIES", Value: json.RawMessage(`{"sun":0}`)}}})
	if h := st.History[len(st.History)-1].Text; !strings.Contains(h, "declared data types refused") {
		t.Errorf("history of the rival's result: %q", h)
	}
	// A router that was never told of the contract does not know the type.
	if _, ok := route.NewRouter().SlotFor("WORD_FREQUENCIES", ""); ok {
		t.Error("a declared type leaked into another router")
	}
}

func TestInputBuilderTable(t *testing.T) {
	b := route.NewInputBuilder(route.NewRouter())
	text := schemas.TextValue("hello", "x")
	slots := map[string]schemas.TypedValue{
		route.SlotImageIDs:    fixture.Files(schemas.ContentImages, "i1"),
		route.SlotDocumentIDs: fixture.Files(schemas.ContentDocuments, "d1"),
		route.SlotText:        text,
	}
	cases := []struct {
		name    string
		in      schemas.TypedInput
		want    string // first ID or text, "" when left out
		wantErr bool
	}{
		{"images by hint", schemas.TypedInput{Name: "x", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Required: true}, "i1", false},
		{"documents by hint", schemas.TypedInput{Name: "x", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentDocuments, Required: true}, "d1", false},
		{"no hint falls back to any files", schemas.TypedInput{Name: "x", DataType: schemas.TypeFileIDs, Required: true}, "any", false},
		{"text", schemas.TypedInput{Name: "x", DataType: schemas.TypeText, Required: true}, "hello", false},
		{"links missing, required", schemas.TypedInput{Name: "x", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentLinks, Required: true}, "", true},
		{"links missing, optional", schemas.TypedInput{Name: "x", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentLinks}, "", false},
		{"analysis missing", schemas.TypedInput{Name: "x", DataType: schemas.TypeAnalysisResult, Required: true}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := b.Build(schemas.AgentContract{Name: "A", Inputs: []schemas.TypedInput{c.in}}, slots)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v", err, c.wantErr)
			}
			v, ok := got["x"]
			switch {
			case c.want == "":
				if ok {
					t.Errorf("got %+v, want nothing", v)
				}
			case c.want == "hello":
				if s, _ := v.Text(); s != "hello" {
					t.Errorf("got %+v", v)
				}
			case c.want == "any":
				if v.DataType != schemas.TypeFileIDs {
					t.Errorf("got %+v", v)
				}
			default:
				fc, _ := v.Files()
				if ids := fc.IDs(); len(ids) == 0 || ids[0] != c.want {
					t.Errorf("got %v, want %s", ids, c.want)
				}
			}
		})
	}
}
