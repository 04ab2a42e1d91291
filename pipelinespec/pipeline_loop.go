package pipelinespec

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// Step kinds that run their agent more than once (see docs/workflows.md).
const (
	// StepKindForEach runs its agent once per item of a collection, up to
	// ForEachSpec.Parallel at a time, and merges the items' outputs.
	StepKindForEach = "for_each"
	// StepKindRepeat runs its agent again and again, each iteration fed
	// the previous one's outputs, until RepeatSpec.Until holds or
	// RepeatSpec.MaxIterations ran.
	StepKindRepeat = "repeat"
)

// IsLoopKind reports whether a step kind runs its agent more than once.
func IsLoopKind(kind string) bool { return kind == StepKindForEach || kind == StepKindRepeat }

// MaxLoopParallel bounds ForEachSpec.Parallel; MaxLoopItems the items of
// one for-each and MaxLoopIterations a repeat's max_iterations: the
// defaults of Limits, which the orchestrator may raise.
const (
	MaxLoopParallel   = 64
	MaxLoopItems      = 10_000
	MaxLoopIterations = 100
)

// DefaultFlowTimeout is the time budget of a for_each, repeat or pipeline
// step that names no timeout_ms: the whole loop, or the whole child run.
const DefaultFlowTimeout = time.Hour

// DefaultLoopParallel is the parallelism of a for-each that names none.
const DefaultLoopParallel = 4

// ForEachSpec is what a step of kind for_each iterates over. Items is the
// collection: a source as step inputs name them ("seed.<name>",
// "state.<slot>", "<step>.<output>") or "vars.<name>" (a list variable).
// A FILE_IDS value gives one item a file id, a TEXT value one item a
// non-empty line, a list variable one TEXT item an element. Each item is
// given to the agent as input Input (default: the agent's one required
// input); the other inputs are built once, as for any step. A for_each
// that names a Pipeline instead of an agent runs that pipeline once per
// item, the item its seed value Input (default: its one seed value).
type ForEachSpec struct {
	Items    string `json:"items" yaml:"items"`
	Input    string `json:"input,omitempty" yaml:"input"`
	Parallel int    `json:"parallel,omitempty" yaml:"parallel"`
}

// Limit is the parallelism: Parallel, else DefaultLoopParallel.
func (f *ForEachSpec) Limit() int {
	if f == nil || f.Parallel <= 0 {
		return DefaultLoopParallel
	}
	return f.Parallel
}

// RepeatSpec is how a step of kind repeat ends: after an iteration whose
// outputs make Until hold (a condition, as when:, that also reads
// output.<name> and iteration), or after MaxIterations (required), which
// completes the step with the last iteration's outputs and says so.
type RepeatSpec struct {
	Until         string `json:"until" yaml:"until"`
	MaxIterations int    `json:"max_iterations" yaml:"max_iterations"`
}

// validateLoop checks the shape of a for_each or repeat step.
func (s PipelineStep) validateLoop() []error {
	var errs []error
	if s.Kind != StepKindForEach && s.ForEach != nil {
		errs = append(errs, fmt.Errorf("step %q: for_each is set but the step's kind is %q; set kind: %s or remove for_each", s.ID, s.Kind, StepKindForEach))
	}
	if s.Kind != StepKindRepeat && s.Repeat != nil {
		errs = append(errs, fmt.Errorf("step %q: repeat is set but the step's kind is %q; set kind: %s or remove repeat", s.ID, s.Kind, StepKindRepeat))
	}
	switch s.Kind {
	case StepKindForEach:
		f := s.ForEach
		if f == nil || f.Items == "" {
			errs = append(errs, fmt.Errorf("step %q: a for_each needs for_each.items: the collection (seed.<name>, state.<slot>, <step>.<output> or vars.<name>)", s.ID))
			break
		}
		if strings.HasPrefix(f.Items, "text:") {
			errs = append(errs, fmt.Errorf("step %q: for_each.items %q is a literal; name a source (seed.<name>, state.<slot>, <step>.<output>) or vars.<name>", s.ID, f.Items))
		}
		if f.Parallel < 0 { // the upper bound is a limit (Limits.ForEachParallel)
			errs = append(errs, fmt.Errorf("step %q: for_each.parallel %d is out of range; give 1 to %d (default %d)", s.ID, f.Parallel, MaxLoopParallel, DefaultLoopParallel))
		}
	case StepKindRepeat:
		r := s.Repeat
		if r == nil || r.Until == "" {
			errs = append(errs, fmt.Errorf("step %q: a repeat needs repeat.until: the condition that ends it, e.g. int(output.text) > 3", s.ID))
		}
		if r == nil || r.MaxIterations < 1 { // the upper bound is a limit (Limits.RepeatIterations)
			n := 0
			if r != nil {
				n = r.MaxIterations
			}
			errs = append(errs, fmt.Errorf("step %q: repeat.max_iterations %d: give the bound of the loop, 1 to %d (it is required)", s.ID, n, MaxLoopIterations))
		}
	default:
		return errs
	}
	if s.Kind == StepKindForEach && s.Pipeline != nil {
		return errs // runs a pipeline per item (validateSub)
	}
	if err := schemas.ValidateAgentName(s.Agent); err != nil {
		errs = append(errs, fmt.Errorf("step %q: a %s runs an agent: %w", s.ID, s.Kind, err))
	}
	return errs
}

// LoopTaskID is the task id of item (or iteration) i of a loop step:
// <run>-<step>-1-<i>-<tag> (schemas.TaskTag of the run's nonce), or
// <run>-<step>-1-<i> for a run without a nonce. LoopItem reads i back
// from one.
func LoopTaskID(runID, stepID string, i int, nonce string) string {
	return schemas.TaskTag(fmt.Sprintf("%s-%s-1-%d", runID, stepID, i), nonce)
}

// LoopItem returns the item a loop step's task id names: true only for an
// id LoopTaskID makes with the same nonce.
func LoopItem(runID, stepID, taskID, nonce string) (int, bool) {
	rest, ok := strings.CutPrefix(taskID, runID+"-"+stepID+"-1-")
	if !ok {
		return 0, false
	}
	if nonce != "" {
		cut := strings.LastIndexByte(rest, '-')
		if cut < 0 {
			return 0, false
		}
		rest = rest[:cut]
	}
	if rest == "" || len(rest) > 6 || len(rest) > 1 && rest[0] == '0' {
		return 0, false // one spelling per item: no leading zeros
	}
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if LoopTaskID(runID, stepID, n, nonce) != taskID {
		return 0, false // a tag that is not the nonce's
	}
	return n, true
}
