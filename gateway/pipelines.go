package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// RunAccepted is the answer of POST /api/pipelines.
type RunAccepted struct {
	RunID string `json:"run_id"`
}

// Validation is the answer of POST /api/pipelines/validate for a valid
// pipeline: its waves as the orchestrator would run them.
type Validation struct {
	OK    bool       `json:"ok"`
	Waves [][]string `json:"waves"`
}

// invalidPipeline is the error answer of a pipeline that fails validation:
// the whole message, and each problem on its own.
type invalidPipeline struct {
	Error    *apiError `json:"error"`
	Problems []string  `json:"problems"`
}

// maxPipelineBytes bounds a pipeline body (a run's spec is one KV value).
const maxPipelineBytes = 1 << 20

func (g *Gateway) handleSubmit(w http.ResponseWriter, r *http.Request, c *conn) error {
	spec, err := g.readPipeline(w, r, c)
	if err != nil {
		return err
	}
	runID, err := c.runIDFor(r, spec.Name)
	if err != nil {
		return err
	}
	id, err := client.SubmitPipeline(r.Context(), c.js, c.names, spec, runID, g.cfg.source)
	if errors.Is(err, client.ErrRunExists) { // another submission, through any gateway, was first
		return fail(CodeRunExists, "run id %q is taken by a submission accepted just before this one (GET /api/runs/%s); submit with another run_id, or none to have one made", runID, runID)
	}
	if err != nil {
		return meshError("submitting the pipeline", err)
	}
	writeJSON(w, http.StatusAccepted, RunAccepted{RunID: id})
	return nil
}

// checkRunFree refuses a run id that names a run the mesh holds (409
// run_exists): the orchestrator would drop the submission. It is a
// courtesy: of submissions racing for one run id, the requests stream
// decides (client.SubmitPipeline, ErrRunExists). An identity
// that may not read run state (a client on a secure mesh) is not checked
// here; the orchestrator refuses the submission on its event id.
// runIDFor is the run id a submission asks for (?run_id, checked and
// free) or else one made from prefix and the time.
func (c *conn) runIDFor(r *http.Request, prefix string) (string, error) {
	runID := r.URL.Query().Get("run_id")
	if runID != "" {
		if err := bus.ValidateToken("run id", runID); err != nil {
			return "", fail(schemas.CodeInvalidID, "%v", err)
		}
		return runID, c.checkRunFree(r.Context(), runID)
	}
	runID = strings.ReplaceAll(fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()), " ", "_")
	if bus.ValidateToken("run id", runID) != nil {
		runID = fmt.Sprintf("run-%d", time.Now().UnixNano())
	}
	return runID, nil
}

func (c *conn) checkRunFree(ctx context.Context, runID string) error {
	if c.store == nil {
		return nil
	}
	h, _, err := c.store.Header(ctx, runID)
	switch {
	case err == nil:
		return fail(CodeRunExists, "run id %q is taken by a run that is %s (GET /api/runs/%s); submit with another run_id, or none to have one made", runID, h.Status, runID)
	case errors.Is(err, stateview.ErrNotFound), errors.Is(err, jetstream.ErrKeyNotFound):
		return nil
	}
	return meshError("checking run id "+runID, err)
}

// handleValidate answers whether a submission of the same body would be
// accepted: it makes the checks handleSubmit makes (readPipeline), and
// answers the waves the orchestrator would run.
func (g *Gateway) handleValidate(w http.ResponseWriter, r *http.Request, c *conn) error {
	spec, err := g.readPipeline(w, r, c)
	if err != nil {
		return err
	}
	waves, _ := g.cfg.validate(spec, c.lookup)
	writeJSON(w, http.StatusOK, Validation{OK: true, Waves: waves})
	return nil
}

// readPipeline reads the request's pipeline (see decodePipeline).
func (g *Gateway) readPipeline(w http.ResponseWriter, r *http.Request, c *conn) (pipelinespec.PipelineSpec, error) {
	body, err := readBody(w, r, maxPipelineBytes)
	if err != nil {
		return pipelinespec.PipelineSpec{}, err
	}
	return decodePipeline(body, r.Header.Get("Content-Type"), r.URL.Query()["var"], c.lookup, g.cfg.validate)
}

// decodePipeline decodes a pipeline body (YAML or JSON by contentType),
// sets the variables of vars (name=value) and validates the spec against
// the live agents lookup knows: the checks agentmesh run makes, then the
// orchestrator's at submission (the pipeline's JSON Schema, then
// its validator), and the gateway's own: no sub-pipeline by file.
// Every problem is reported at once, with the messages the CLI shows.
func decodePipeline(body []byte, contentType string, vars []string, lookup func(string) (schemas.AgentContract, bool), validate Validator) (pipelinespec.PipelineSpec, error) {
	format, err := pipelineFormat(contentType)
	if err != nil {
		return pipelinespec.PipelineSpec{}, err
	}
	spec, err := client.ParsePipeline(body, format)
	if err == nil {
		spec, err = client.SetVars(spec, vars)
	}
	if err == nil {
		err = errors.Join(subFiles(spec, ""), checkSchema(spec))
	}
	if err == nil { // the orchestrator's checks against the live agents
		_, err = validate(spec, lookup)
	}
	if err != nil {
		return spec, pipelineError(err)
	}
	return spec, nil
}

// subFiles refuses every sub-pipeline given by file, at any depth: the
// gateway reads no file of its own machine for a client (agentmesh run
// reads them on the client's). where prefixes the step of a nested one.
func subFiles(spec pipelinespec.PipelineSpec, where string) error {
	var errs []error
	for _, st := range spec.Steps {
		p := st.Pipeline
		switch {
		case p == nil:
		case p.File != "":
			errs = append(errs, fmt.Errorf("step %s%q: pipeline.file %q is refused over HTTP: the gateway reads no file for a client; give the pipeline inline (pipeline.spec), by name from the orchestrator's --pipelines directory (pipeline.name), or submit the file with agentmesh run",
				where, st.ID, clipHeader(p.File)))
		case p.Spec != nil:
			errs = append(errs, subFiles(*p.Spec, fmt.Sprintf("%s%q > ", where, st.ID)))
		}
	}
	return errors.Join(errs...)
}

// checkSchema checks spec against the pipeline's JSON Schema, as the
// orchestrator checks a submission's data.
func checkSchema(spec pipelinespec.PipelineSpec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("the pipeline does not encode as JSON: %w", err)
	}
	return schemas.ValidateJSON(schemas.SchemaPipeline, b)
}

// pipelineFormat reads the body's format from its media type (see
// pipelineTypes).
func pipelineFormat(contentType string) (string, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if format := pipelineTypes[mt]; err == nil && format != "" {
		return format, nil
	}
	return "", &apiError{Status: http.StatusUnsupportedMediaType, Code: schemas.CodeInvalidRequest,
		Message: fmt.Sprintf("Content-Type %q: a pipeline is sent as application/yaml or application/json", clipHeader(contentType))}
}

// pipelineError is the 400 answer of a pipeline that does not decode or
// validate: its message in one line, as agentmesh run prints it, and its
// problems one by one.
type pipelineErr struct {
	*apiError
	problems []string
}

func pipelineError(err error) error {
	var problems []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			problems = append(problems, l)
		}
	}
	return &pipelineErr{apiError: fail(schemas.CodeInvalidPipeline, "%s", strings.Join(problems, "; ")), problems: problems}
}

// lookup is the registry as the pipeline validator reads it.
func (c *conn) lookup(agent string) (schemas.AgentContract, bool) {
	info, ok := c.reg.Lookup(agent)
	return info.Contract, ok
}
