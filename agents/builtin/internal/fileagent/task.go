package fileagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Task is one Execute of a built-in file agent. It reads the inputs and
// params its contract declares, records the items it skips and why, and
// builds the result: the success (Done), whose summary ends with what was
// skipped, or a failure (Fail, FailAll, Abort).
type Task struct {
	contract schemas.AgentContract
	skipped  []string

	// Skipping names the skipped items in the summary: "skipped 2 scope
	// ids: ..." for "scope ids", "skipped 2: ..." when empty.
	Skipping string
}

// Start begins a task of the agent whose contract is c.
func Start(c schemas.AgentContract) *Task { return &Task{contract: c} }

// failure is an error that ends a task with a failed result.
type failure struct {
	code, message string
	retryable     bool
}

func (f *failure) Error() string { return f.message }

// Failf returns an error that Abort turns into a failed result with code
// and the formatted message, not to be retried.
func Failf(code, format string, args ...any) error {
	return &failure{code: code, message: fmt.Sprintf(format, args...)}
}

// Abort ends the task with err. An error of Failf, Files, Decode, IntParam,
// Search or List becomes the failed result; any other error (the ctx's, a
// Retryable one) is returned as Execute's error.
func (t *Task) Abort(err error) (schemas.AgentResult, error) {
	if f, ok := errors.AsType[*failure](err); ok {
		return schemas.Failure(t.contract.Name, f.code, f.message, f.retryable), nil
	}
	return schemas.AgentResult{}, err
}

// Fail ends the task with a failed result with code and the formatted
// message, not to be retried.
func (t *Task) Fail(code, format string, args ...any) (schemas.AgentResult, error) {
	return t.Abort(Failf(code, format, args...))
}

// FailAll ends the task when nothing could be used and every item was
// skipped: "none of the 3 files could be analysed: <why each>" for what
// "files could be analysed".
func (t *Task) FailAll(code, what string) (schemas.AgentResult, error) {
	n, why := t.Skipped()
	return t.Fail(code, "none of the %d %s: %s", n, what, why)
}

// Done ends the task with success: the summary, followed by what was
// skipped, the outputs, and what a model used (tokens, cost, model time).
func (t *Task) Done(summary string, outputs map[string]schemas.TypedValue, usage schemas.Usage) (schemas.AgentResult, error) {
	if n, why := t.Skipped(); n > 0 {
		what := strconv.Itoa(n)
		if t.Skipping != "" {
			what = schemas.Plural(n, strings.TrimSuffix(t.Skipping, "s"), t.Skipping)
		}
		summary += fmt.Sprintf("; skipped %s: %s", what, why)
	}
	return schemas.AgentResult{
		Success:    true,
		Agent:      t.contract.Name,
		Capability: t.contract.Capability,
		Summary:    summary,
		Outputs:    outputs,
		Metrics:    usage.Metrics(),
	}, nil
}

// Skip records an item the task could not use and why.
func (t *Task) Skip(format string, args ...any) {
	t.skipped = append(t.skipped, fmt.Sprintf(format, args...))
}

// SkipError skips id because of err, unless ctx has ended: then it returns
// ctx's error, and the task stops.
func (t *Task) SkipError(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	t.Skip("%s: %v", id, err)
	return nil
}

// Skipped returns how many items were skipped and why, joined by "; ".
func (t *Task) Skipped() (int, string) {
	return len(t.skipped), strings.Join(t.skipped, "; ")
}

// Files returns the IDs of the FILE_IDS input name. An input that is
// missing or unreadable, or a collection still spilled to the object store,
// is a task failure.
func (t *Task) Files(ec *schemas.ExecutionContext, name string) ([]string, error) {
	fc, err := ec.Files(name)
	if err != nil {
		return nil, t.badInput(name, err)
	}
	if fc.Spilled() {
		return nil, Failf(schemas.CodeInvalidInput, "input %q is a spilled collection (%s); the runtime resolves those before Execute", name, fc.Ref())
	}
	return fc.IDs(), nil
}

// Decode reads the input name, of the data type the contract declares, into
// v. An input that is missing or does not decode is a task failure.
func (t *Task) Decode(ec *schemas.ExecutionContext, name string, v any) error {
	in, _ := t.contract.Input(name)
	tv, err := ec.Read(name, in.DataType)
	if err != nil {
		return t.badInput(name, err)
	}
	if err := tv.Decode(v); err != nil {
		return Failf(schemas.CodeInvalidInput, "input %q: %v", name, err)
	}
	return nil
}

// badInput is the failure of an input that cannot be read: `input "images"
// (FILE_IDS of images) is required: ...` for a required one, `input "scope":
// ...` for another.
func (t *Task) badInput(name string, err error) error {
	in, _ := t.contract.Input(name)
	if !in.Required {
		return Failf(schemas.CodeInvalidInput, "input %q: %v", name, err)
	}
	kind := in.DataType
	if in.ContentTypeHint != "" {
		kind += " of " + in.ContentTypeHint
	}
	return Failf(schemas.CodeInvalidInput, "input %q (%s) is required: %v", name, kind, err)
}

// EachFile reads the files of ids through files, in order, and calls use
// with the index, ID and content of each one read. A file that cannot be
// read is skipped with its error. EachFile returns ctx's error when ctx
// ended while the files were read.
func (t *Task) EachFile(ctx context.Context, files resolvers.FileResolver, ids []string, use func(i int, id string, f resolvers.File)) error {
	i := 0
	for f, err := range files.ResolveBatch(ctx, ids) {
		k := i
		i++
		if err != nil {
			if err := t.SkipError(ctx, ids[k], err); err != nil {
				return err
			}
			continue
		}
		use(k, ids[k], f)
	}
	return nil
}

// IntParam reads the param name, a whole number of at least 1, or def when
// the task does not give it. Any other value is a task failure.
func (t *Task) IntParam(ec *schemas.ExecutionContext, name string, def int) (int, error) {
	v, ok := ec.Params()[name]
	if !ok || v == nil {
		return def, nil
	}
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, Failf(schemas.CodeInvalidParams, "param %s %q is not a number; give a whole number such as 20", name, x)
		}
		n = f
	default:
		return 0, Failf(schemas.CodeInvalidParams, "param %s %v (%T) is not a number; give a whole number such as 20", name, v, v)
	}
	if n < 1 || n != math.Trunc(n) {
		return 0, Failf(schemas.CodeInvalidParams, "param %s %v must be a whole number of at least 1", name, v)
	}
	return int(n), nil
}
