package gateway

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// ForkRequest is the body of POST /api/runs/{id}/fork: the step to run
// again from, and the params ("<step>.<param>") and vars to change (see
// schemas.ForkRequest).
type ForkRequest struct {
	At     string         `json:"at"`
	Params map[string]any `json:"params,omitempty"`
	Vars   map[string]any `json:"vars,omitempty"`
}

// handleFork starts a new run from run {id} as it was before a step (see
// schemas.ForkRequest) and answers its id, as POST /api/pipelines does.
// What the gateway can check from the run's state (the run and the step
// exist) it refuses at once; the orchestrator refuses the rest on the new
// run's events.
func (g *Gateway) handleFork(w http.ResponseWriter, r *http.Request, c *conn) error {
	from := r.PathValue("id")
	if err := bus.ValidateToken("run id", from); err != nil {
		return fail(schemas.CodeInvalidID, "%v", err)
	}
	var body ForkRequest
	if err := g.decodeJSON(w, r, &body); err != nil {
		return err
	}
	req := schemas.ForkRequest{From: from, At: body.At, Params: body.Params, Vars: body.Vars}
	if err := req.Validate(); err != nil {
		return fail(schemas.CodeInvalidPipeline, "%v", err)
	}
	if c.store != nil {
		run, err := g.loadRun(r, c)
		if err != nil {
			return err
		}
		if _, ok := findStep(run.Spec.Steps, req.At); !ok {
			ids := make([]string, 0, len(run.Spec.Steps))
			for _, s := range run.Spec.Steps {
				ids = append(ids, s.ID)
			}
			return fail(schemas.CodeInvalidPipeline, "fork: run %s has no step %q (its steps: %s)", from, req.At, strings.Join(ids, ", "))
		}
	}
	runID, err := c.runIDFor(r, from+"-fork")
	if err != nil {
		return err
	}
	id, err := client.SubmitFork(r.Context(), c.js, c.names, req, runID, g.cfg.source)
	if errors.Is(err, client.ErrRunExists) {
		return fail(CodeRunExists, "run id %q is taken by a submission accepted just before this one (GET /api/runs/%s); fork with another run_id, or none to have one made", runID, runID)
	}
	if err != nil {
		return meshError("forking run "+from, err)
	}
	writeJSON(w, http.StatusAccepted, RunAccepted{RunID: id})
	return nil
}
