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

// Case is one chat message and what its answer must be.
type Case struct {
	Name   string `yaml:"name"`
	Chat   string `yaml:"chat"`
	Expect Expect `yaml:"expect"`
}

// Expect is what a turn must show. Every field is optional; State is
// "completed" unless set.
type Expect struct {
	State       string   `yaml:"state"`
	Contains    []string `yaml:"contains"`     // in the answer, ignoring case
	NotContains []string `yaml:"not_contains"` // not in the answer, ignoring case
	Regex       []string `yaml:"regex"`        // each matches the answer
	// Schema is a JSON Schema (written in YAML or JSON) the answer must
	// meet: the answer is a JSON document, bare or in a ```json fence.
	Schema any `yaml:"schema"`
	// Agents are called in this order (other calls may come between).
	Agents []string `yaml:"agents"`
	// Params: for an agent, params its first call must have had (equal as
	// JSON values).
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
		if strings.TrimSpace(c.Chat) == "" {
			bad("%s has no chat message", where)
		}
		switch c.Expect.State {
		case "", schemas.ChatCompleted, schemas.ChatFailed, schemas.ChatInputRequired:
		default:
			bad("%s: state %q: use %s, %s or %s", where, c.Expect.State, schemas.ChatCompleted, schemas.ChatFailed, schemas.ChatInputRequired)
		}
		for _, r := range c.Expect.Regex {
			if _, err := regexp.Compile(r); err != nil {
				bad("%s: regex %q: %v", where, r, err)
			}
		}
		if c.Expect.Schema != nil {
			if _, err := answerSchema(c.Expect.Schema); err != nil {
				bad("%s: schema: %v", where, err)
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
