package text

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/schemas"
)

// Name is the agent's name on the mesh.
const Name = "TextAgent"

// Ops are the transformations the op parameter selects.
var Ops = []string{"upper", "lower", "reverse", "title", "wordcount"}

const paramsSchema = `{
  "type": "object",
  "properties": {
    "op": {"type": "string", "enum": ["upper", "lower", "reverse", "title", "wordcount"], "default": "upper",
           "description": "the transformation: upper, lower, reverse, title or wordcount"},
    "delay_ms": {"type": "integer", "minimum": 0, "maximum": 3600000,
                 "description": "wait this long before answering (honours cancellation); for tests"}
  },
  "additionalProperties": false
}`

// Agent transforms its text input as the op parameter says.
type Agent struct{}

// New returns the text agent.
func New() agents.Agent { return Agent{} }

// Contract declares one required TEXT input and one TEXT output.
func (Agent) Contract() schemas.AgentContract {
	return schemas.AgentContract{
		Name:        Name,
		Version:     "1.0.0",
		Capability:  schemas.CapTransformation,
		Description: "Transforms text: upper case, lower case, reverse, title case, or counts the words.",
		Inputs:      []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true, Description: "the text to transform"}},
		Outputs:     []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText, Description: "the transformed text (the count, for wordcount)"}},
		Params:      json.RawMessage(paramsSchema),
		TimeoutMS:   int64(time.Hour / time.Millisecond),
	}
}

// Execute applies the op to the text input after the optional delay.
func (Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	in, err := ec.Text("text")
	if err != nil {
		return schemas.AgentResult{}, err
	}
	op := ec.Param("op")
	if op == "" {
		op = "upper"
	}
	if !slices.Contains(Ops, op) {
		return schemas.AgentResult{}, fmt.Errorf("op %q is unknown: use one of %s", op, strings.Join(Ops, ", "))
	}
	if d := ec.Param("delay_ms"); d != "" {
		ms, err := strconv.ParseFloat(d, 64)
		if err != nil || ms < 0 {
			return schemas.AgentResult{}, fmt.Errorf("delay_ms %q: use a whole number of milliseconds", d)
		}
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return schemas.AgentResult{}, context.Cause(ctx)
		}
	}
	out, summary := Transform(op, in)
	return schemas.AgentResult{
		Success: true,
		Summary: summary,
		Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(out, Name)},
	}, nil
}

// Transform applies op to s and describes what it did.
func Transform(op, s string) (out, summary string) {
	switch op {
	case "lower":
		out = strings.ToLower(s)
	case "reverse":
		r := []rune(s)
		slices.Reverse(r)
		out = string(r)
	case "title":
		prev := ' '
		out = strings.Map(func(c rune) rune {
			defer func() { prev = c }()
			if unicode.IsSpace(prev) {
				return unicode.ToTitle(c)
			}
			return unicode.ToLower(c)
		}, s)
	case "wordcount":
		n := len(strings.Fields(s))
		return strconv.Itoa(n), "counted " + schemas.Plural(n, "word", "words")
	default:
		out = strings.ToUpper(s)
	}
	return out, op + " of " + schemas.Plural(len([]rune(s)), "character", "characters")
}
