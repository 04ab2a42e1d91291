package pipelinespec

import (
	"fmt"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// Step kinds that wait for a person (see docs/workflows.md).
const (
	// StepKindApproval waits for a person to approve or reject; approved,
	// it completes and its dependants run; rejected, it fails with code
	// rejected and its dependants are skipped.
	StepKindApproval = "approval"
	// StepKindInput waits for a person to give a value, which becomes the
	// step's output "value" of the declared data type (TEXT by default).
	StepKindInput = "input"
)

// Approval decisions.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
)

// HumanOutput is the name of an input step's output.
const HumanOutput = "value"

// IsHumanKind reports whether a step kind waits for a person.
func IsHumanKind(kind string) bool { return kind == StepKindApproval || kind == StepKindInput }

// HumanStep is what a step of kind approval or input asks a person, and
// what happens when nobody answers by the step's timeout_ms (required).
type HumanStep struct {
	// Prompt is the question shown to the person.
	Prompt string `json:"prompt" yaml:"prompt"`
	// Default is the outcome when the timeout passes: for approval,
	// "approve" or "reject" (the default when empty); for input, a value
	// of DataType (none: the step fails with code timeout).
	Default any `json:"default,omitempty" yaml:"default"`
	// DataType is an input step's value type (TEXT when empty), checked
	// against its schema; ContentTypeHint its hint.
	DataType        string `json:"data_type,omitempty" yaml:"data_type"`
	ContentTypeHint string `json:"content_type_hint,omitempty" yaml:"content_type_hint"`
}

// InputType is the data type of an input step's value: DataType, else TEXT.
func (h *HumanStep) InputType() string {
	if h == nil || h.DataType == "" {
		return schemas.TypeText
	}
	return h.DataType
}

// validateHuman checks a step of kind approval or input: no agent, a
// prompt, a timeout and a default of the right shape. The input default's
// value is checked against its data type by the orchestrator.
func (s PipelineStep) validateHuman() []error {
	var errs []error
	if s.Agent != "" {
		errs = append(errs, fmt.Errorf("step %q: a step of kind %s has no agent (it names %q); remove agent or change the kind", s.ID, s.Kind, s.Agent))
	}
	if s.TimeoutMS <= 0 {
		errs = append(errs, fmt.Errorf("step %q: a step of kind %s needs timeout_ms, how long to wait for a person before its default applies", s.ID, s.Kind))
	}
	if s.Human == nil || s.Human.Prompt == "" {
		errs = append(errs, fmt.Errorf("step %q: a step of kind %s needs human.prompt, the question for the person", s.ID, s.Kind))
		return errs
	}
	if s.Kind == StepKindApproval {
		if d, _ := s.Human.Default.(string); s.Human.Default != nil && d != DecisionApprove && d != DecisionReject {
			errs = append(errs, fmt.Errorf("step %q: human.default %v: an approval's default is %q or %q", s.ID, s.Human.Default, DecisionApprove, DecisionReject))
		}
		if s.Human.DataType != "" {
			errs = append(errs, fmt.Errorf("step %q: human.data_type %q: only an input step has a data type", s.ID, s.Human.DataType))
		}
	}
	return errs
}

// Resolution is the data of io.agentmesh.pipeline.resolve.requested on
// mesh.pipeline.resolve (resolve.schema.json): a person's answer to an
// approval or input step that waits.
type Resolution struct {
	RunID string `json:"runid"`
	Step  string `json:"step"`
	// Decision answers an approval: "approve" or "reject".
	Decision string `json:"decision,omitempty"`
	// Value answers an input: a JSON value of the step's data type (a
	// string for TEXT).
	Value   any    `json:"value,omitempty"`
	Comment string `json:"comment,omitempty"`
	// By names who answered (free text, for the record).
	By string `json:"by,omitempty"`
	// Cancel marks a reject sent by a cancel of the run (POST
	// /api/runs/{id}/cancel): the step fails with code cancelled, not
	// rejected, and the run ends cancelled.
	Cancel bool `json:"cancel,omitempty"`
}

// ResolveRefusal is the data of io.agentmesh.pipeline.resolve.refused on
// mesh.events.<run>.pipeline (resolve-refusal.schema.json): a resolution
// that changed nothing, and why.
type ResolveRefusal struct {
	RunID string `json:"runid"`
	Step  string `json:"step,omitempty"`
	// Request is the id of the refused resolve event.
	Request string    `json:"request"`
	Code    string    `json:"code"`
	Error   string    `json:"error"`
	At      time.Time `json:"at"`
}
