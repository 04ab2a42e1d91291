package eval

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentmesh/agentmesh/schemas"
)

// MaxRuns bounds how many times one case may run.
const MaxRuns = 100

// ErrInvalidSet reports an eval set that cannot be run.
var ErrInvalidSet = errors.New("invalid eval set")

// Set is an eval set: cases run Runs times each (default 1); a case passes
// when at least Threshold of its runs (0 to 1, default 1: every run) meet
// its expectations.
type Set struct {
	Name      string  `yaml:"name"`
	Runs      int     `yaml:"runs"`
	Threshold float64 `yaml:"threshold"`
	Cases     []Case  `yaml:"cases"`
}

// Case is one chat message, or one pipeline run, and what it must show.
type Case struct {
	Name string `yaml:"name"`
	Chat string `yaml:"chat"`
	// Pipeline is a pipeline spec, inline or the path of its file
	// (relative to the eval set's file); Vars set the variables it
	// declares, as --var does.
	Pipeline Pipeline       `yaml:"pipeline"`
	Vars     map[string]any `yaml:"vars"`
	Expect   Expect         `yaml:"expect"`
}

// Pipeline is a case's pipeline: File, or Inline (the spec as YAML).
type Pipeline struct {
	File   string
	Inline []byte
}

// IsZero reports whether the case has no pipeline.
func (p Pipeline) IsZero() bool { return p.File == "" && len(p.Inline) == 0 }

// UnmarshalYAML reads a file path (a string) or an inline spec (a mapping).
func (p *Pipeline) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Decode(&p.File)
	case yaml.MappingNode:
		b, err := yaml.Marshal(n)
		if err != nil {
			return fmt.Errorf("line %d: pipeline: %v", n.Line, err)
		}
		p.Inline = b
		return nil
	}
	return fmt.Errorf("line %d: pipeline: give the path of a pipeline file or the spec itself (a mapping with name and steps)", n.Line)
}

// OutputExpect is what one output value of a pipeline must be: its text
// (a TEXT value's text, else its JSON) contains words or matches
// regexes; its JSON meets a JSON Schema.
type OutputExpect struct {
	Contains    []string `yaml:"contains"`
	NotContains []string `yaml:"not_contains"`
	Regex       []string `yaml:"regex"`
	Schema      any      `yaml:"schema"`
}

// Expect is what a turn must show. Every field is optional; State is
// "completed" unless set.
type Expect struct {
	// State is a chat turn's state, or a pipeline run's status.
	State string `yaml:"state"`
	// Code is the error code the turn or run failed with.
	Code        string   `yaml:"code"`
	Contains    []string `yaml:"contains"`     // in the answer, ignoring case
	NotContains []string `yaml:"not_contains"` // not in the answer, ignoring case
	Regex       []string `yaml:"regex"`        // each matches the answer
	// Schema is a JSON Schema (written in YAML or JSON) the answer must
	// meet: the answer is a JSON document, bare or in a ```json fence.
	Schema any `yaml:"schema"`
	// Judge has the configured model score the answer against a rubric.
	Judge *Judge `yaml:"judge"`
	// Outputs: for a pipeline's output "STEP.NAME", what its value must be.
	Outputs map[string]OutputExpect `yaml:"outputs"`
	// Agents are called in this order (other calls may come between); a
	// pipeline's calls are the steps that ran, in the order they started.
	Agents []string `yaml:"agents"`
	// Params: for an agent (or a pipeline's step id), params its first
	// call must have had (equal as JSON values).
	Params     map[string]map[string]any `yaml:"params"`
	MaxCost    float64                   `yaml:"max_cost"`    // US dollars
	MaxLatency Duration                  `yaml:"max_latency"` // e.g. 30s
}

// Duration is a time.Duration written as "30s" in YAML.
type Duration time.Duration

// UnmarshalYAML reads a duration such as "1m30s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration such as 30s", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// Parse reads an eval set from YAML (unknown fields are errors) and checks
// it (Validate). Runs 0 becomes 1 and Threshold 0 becomes 1.
func Parse(data []byte) (Set, error) {
	var s Set
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return s, fmt.Errorf("%w: the file is empty; write name: and cases:", ErrInvalidSet)
		}
		return s, fmt.Errorf("%w: %v", ErrInvalidSet, err)
	}
	if s.Runs == 0 {
		s.Runs = 1
	}
	if s.Threshold == 0 {
		s.Threshold = 1
	}
	for _, c := range s.Cases {
		if j := c.Expect.Judge; j != nil && j.Pass == 0 {
			j.Pass = DefaultJudgePass
		}
	}
	return s, s.Validate()
}

// Validate reports every problem of the set at once.
func (s Set) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidSet}, args...)...))
	}
	if s.Runs < 1 || s.Runs > MaxRuns {
		bad("runs %d: give 1 to %d", s.Runs, MaxRuns)
	}
	if s.Threshold <= 0 || s.Threshold > 1 {
		bad("threshold %g: give the share of runs that must pass, above 0 and at most 1 (0.8 is 80%%)", s.Threshold)
	}
	if len(s.Cases) == 0 {
		bad("no cases: list them under cases:, each with name, chat and expect")
	}
	seen := map[string]bool{}
	for i, c := range s.Cases {
		where := fmt.Sprintf("case %d", i+1)
		if c.Name != "" {
			where = fmt.Sprintf("case %q", c.Name)
		}
		switch {
		case strings.TrimSpace(c.Name) == "":
			bad("%s has no name", where)
		case seen[c.Name]:
			bad("%s: the name is used twice; give each case its own", where)
		}
		seen[c.Name] = true
		pipeline := !c.Pipeline.IsZero()
		switch {
		case pipeline && strings.TrimSpace(c.Chat) != "":
			bad("%s has both a chat message and a pipeline; give one", where)
		case !pipeline && strings.TrimSpace(c.Chat) == "":
			bad("%s has no chat message (chat:) or pipeline (pipeline:)", where)
		case !pipeline && len(c.Vars) > 0:
			bad("%s: vars are a pipeline's; this case is a chat message", where)
		case !pipeline && len(c.Expect.Outputs) > 0:
			bad("%s: outputs are a pipeline's; expect on a chat answer with contains, regex or schema", where)
		case pipeline && (len(c.Expect.Contains)+len(c.Expect.NotContains)+len(c.Expect.Regex) > 0 || c.Expect.Schema != nil || c.Expect.Judge != nil):
			bad("%s: a pipeline has no answer; expect on an output with outputs: {STEP.NAME: {contains: [...]}}", where)
		}
		switch st := c.Expect.State; {
		case st == "":
		case pipeline && st != schemas.RunCompleted && st != schemas.RunFailed && st != schemas.RunCancelled:
			bad("%s: state %q: a pipeline run ends %s, %s or %s", where, st, schemas.RunCompleted, schemas.RunFailed, schemas.RunCancelled)
		case !pipeline && st != schemas.ChatCompleted && st != schemas.ChatFailed && st != schemas.ChatInputRequired:
			bad("%s: state %q: use %s, %s or %s", where, st, schemas.ChatCompleted, schemas.ChatFailed, schemas.ChatInputRequired)
		}
		if j := c.Expect.Judge; j != nil {
			if strings.TrimSpace(j.Rubric) == "" {
				bad("%s: judge has no rubric; write what a good answer does, e.g. rubric: cites the 30-day window", where)
			}
			if j.Pass < 0 || j.Pass > 1 {
				bad("%s: judge pass %g: give the score an answer needs, above 0 and at most 1 (default %g)", where, j.Pass, DefaultJudgePass)
			}
		}
		checks := map[string]OutputExpect{"": {Regex: c.Expect.Regex, Schema: c.Expect.Schema}}
		for name, o := range c.Expect.Outputs {
			step, out, ok := strings.Cut(name, ".")
			if !ok || step == "" || out == "" {
				bad("%s: output %q: name it STEP.NAME (the step's id and its output's name)", where, name)
			}
			checks[" output "+name] = o
		}
		for what, o := range checks {
			for _, r := range o.Regex {
				if _, err := regexp.Compile(r); err != nil {
					bad("%s:%s regex %q: %v", where, what, r, err)
				}
			}
			if o.Schema != nil {
				if _, err := answerSchema(o.Schema); err != nil {
					bad("%s:%s schema: %v", where, what, err)
				}
			}
		}
		if c.Expect.MaxCost < 0 {
			bad("%s: max_cost %g is negative", where, c.Expect.MaxCost)
		}
		for agent := range c.Expect.Params {
			if agent == "" {
				bad("%s: params names no agent", where)
			}
		}
	}
	return errors.Join(errs...)
}
