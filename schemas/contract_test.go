package schemas

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func validContract() AgentContract {
	return AgentContract{
		Name: "AnalysisAgent", Version: "1.0.0", Capability: CapAnalysis,
		Description: "Groups images by colour",
		Inputs:      []TypedInput{{Name: "images", DataType: TypeFileIDs, Required: true, ContentTypeHint: ContentImages}},
		Outputs:     []TypedOutput{{Name: "categories", DataType: TypeCategorization, Mergeable: true}},
		Params:      json.RawMessage(`{"type":"object","properties":{"max":{"type":"integer"}}}`),
	}
}

func TestContractValidate(t *testing.T) {
	if err := validContract().Validate(); err != nil {
		t.Fatalf("valid contract: %v", err)
	}
	raw, _ := json.Marshal(validContract())
	if err := ValidateJSON(SchemaContract, raw); err != nil {
		t.Fatalf("valid contract fails contract.schema.json: %v", err)
	}
	c := AgentContract{
		Name:      "bad.name",
		TimeoutMS: -1,
		Inputs:    []TypedInput{{Name: "x", DataType: "NOPE"}, {Name: "x", DataType: TypeText}},
		Outputs:   []TypedOutput{{Name: "1bad", DataType: TypeText, Mergeable: true}},
		Params:    json.RawMessage(`{"type": 12}`),
	}
	err := c.Validate()
	if !errors.Is(err, ErrInvalidContract) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`"bad.name"`, "capability is empty", "description is empty", "timeout_ms", `unknown data type "NOPE"`, `input "x" is declared twice`, `"1bad"`, "TEXT has no merge function", "params:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate did not report %q:\n%v", want, err)
		}
	}
}

func TestContractValidateParams(t *testing.T) {
	c := validContract()
	if err := c.ValidateParams(map[string]any{"max": 3}); err != nil {
		t.Error(err)
	}
	err := c.ValidateParams(map[string]any{"max": "three"})
	if !errors.Is(err, ErrInvalidDocument) || !strings.Contains(err.Error(), "/max") {
		t.Errorf("bad param: %v", err)
	}
}

func TestWireSchemasAcceptGoValues(t *testing.T) {
	task := TaskRequest{Inputs: map[string]TypedValue{"images": FilesValue(FromIDs(ContentImages, "a"), "s")}, Params: map[string]any{"q": "x"}, TimeoutMS: 10}
	res := AgentResult{Success: true, Agent: "A", Outputs: map[string]TypedValue{"t": TextValue("hi", "A")}, Metrics: Metrics{DurationMS: 3}}
	fail := Failure("A", CodeTimeout, "too slow", true)
	docs := map[string]any{
		SchemaTask:         task,
		SchemaResult:       res,
		SchemaAnnouncement: Announcement{Contract: validContract(), Instance: InstanceInfo{ID: "i1", Concurrency: 4}},
		SchemaDeparture:    Departure{Agent: "A", Instance: "i1"},
		SchemaProgress:     TaskProgress{Message: "half", Percent: 50},
		SchemaChatRequest:  ChatRequest{Message: "hi"},
		SchemaChatResponse: ChatResponse{ConversationID: "c", Output: "done", State: ChatCompleted},
		SchemaFileRef:      FileRef{ID: "f", Size: 3},
	}
	for name, v := range docs {
		raw, _ := json.Marshal(v)
		if err := ValidateJSON(name, raw); err != nil {
			t.Errorf("%s: %v\n%s", name, err, raw)
		}
	}
	raw, _ := json.Marshal(fail)
	if err := ValidateJSON(SchemaResult, raw); err != nil {
		t.Errorf("failure: %v", err)
	}
	// A failed result without an error object is refused.
	if err := ValidateJSON(SchemaResult, []byte(`{"success":false,"agent":"A"}`)); !errors.Is(err, ErrInvalidDocument) {
		t.Errorf("failed result without error: %v", err)
	}
	if err := ValidateJSON("nope", []byte(`{}`)); err == nil {
		t.Error("unknown schema name accepted")
	}
}

func TestResultErrorIs(t *testing.T) {
	r := Failure("A", CodeTimeout, "deadline passed", false)
	if !errors.Is(r.Err(), &ResultError{Code: CodeTimeout}) {
		t.Error("errors.Is does not match on the code")
	}
	if errors.Is(r.Err(), &ResultError{Code: CodeCancelled}) {
		t.Error("errors.Is matched another code")
	}
}

func BenchmarkValidateParams(b *testing.B) {
	c := validContract()
	p := map[string]any{"max": 3}
	for b.Loop() {
		if err := c.ValidateParams(p); err != nil {
			b.Fatal(err)
		}
	}
}
