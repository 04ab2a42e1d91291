package schemas

import (
	"errors"
	"fmt"
	"strings"
)

// ForkRequest asks for a new run that starts from run From as it was
// before its step At (agentmesh run --from RUN --at STEP; POST
// /api/runs/{id}/fork): the steps that do not depend on At keep the
// outputs the original recorded and send no task, At and every step that
// depends on it run again. It is the data of an
// io.agentmesh.pipeline.fork.requested event on the pipeline submit
// subject (fork.schema.json); the new run's id is the event's runid
// extension (or its id).
type ForkRequest struct {
	From string `json:"from"`
	At   string `json:"at"`
	// Params change the params of the steps that run again, by
	// "<step>.<param>": a string given for a param whose value in the
	// original spec is a number, a boolean or a list is parsed as one.
	Params map[string]any `json:"params,omitempty"`
	// Vars change the workflow's variables (as run --var does); a variable
	// a kept step reads cannot change.
	Vars map[string]any `json:"vars,omitempty"`
}

// Validate reports every problem of the request at once.
func (r ForkRequest) Validate() error {
	var errs []error
	if r.From == "" {
		errs = append(errs, errors.New("fork: from is empty: name the run to fork"))
	}
	if r.At == "" {
		errs = append(errs, errors.New("fork: at is empty: name the step to run again from"))
	}
	for k := range r.Params {
		if step, name, ok := strings.Cut(k, "."); !ok || step == "" || name == "" {
			errs = append(errs, fmt.Errorf("fork: param %q: write <step>.<param>", k))
		}
	}
	return errors.Join(errs...)
}

// RunOrigin is where a forked run came from: the run it was forked from
// and the step it runs again from.
type RunOrigin struct {
	Run  string `json:"run"`
	Step string `json:"step"`
}
