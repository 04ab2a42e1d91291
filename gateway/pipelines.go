package gateway

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator/pipeline"
	meshroute "github.com/agentmesh/agentmesh/orchestrator/route"
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
	runID := r.URL.Query().Get("run_id")
	if runID != "" {
		if err := bus.ValidateToken("run id", runID); err != nil {
			return fail(schemas.CodeInvalidID, "%v", err)
		}
	} else {
		runID = strings.ReplaceAll(fmt.Sprintf("%s-%d", spec.Name, time.Now().UnixNano()), " ", "_")
		if bus.ValidateToken("run id", runID) != nil {
			runID = fmt.Sprintf("run-%d", time.Now().UnixNano())
		}
	}
	id, err := client.SubmitPipeline(r.Context(), c.js, c.names, spec, runID, g.cfg.source)
	if err != nil {
		return meshError("submitting the pipeline", err)
	}
	writeJSON(w, http.StatusAccepted, RunAccepted{RunID: id})
	return nil
}

func (g *Gateway) handleValidate(w http.ResponseWriter, r *http.Request, c *conn) error {
	spec, err := g.readPipeline(w, r, c)
	if err != nil {
		return err
	}
	_, waves, _ := pipeline.Validate(spec, c.lookup, meshroute.NewRouter())
	writeJSON(w, http.StatusOK, Validation{OK: true, Waves: waves})
	return nil
}

// readPipeline reads the request's pipeline (see decodePipeline).
func (g *Gateway) readPipeline(w http.ResponseWriter, r *http.Request, c *conn) (schemas.PipelineSpec, error) {
	body, err := readBody(w, r, maxPipelineBytes)
	if err != nil {
		return schemas.PipelineSpec{}, err
	}
	return decodePipeline(body, r.Header.Get("Content-Type"), r.URL.Query()["var"], c.lookup)
}

// decodePipeline decodes a pipeline body (YAML or JSON by contentType),
// sets the variables of vars (name=value) and validates the spec against
// the live agents lookup knows: the checks agentmesh run makes, then the
// orchestrator's. Every problem is reported at once, with the messages
// the CLI shows.
func decodePipeline(body []byte, contentType string, vars []string, lookup pipeline.ContractLookup) (schemas.PipelineSpec, error) {
	format, err := pipelineFormat(contentType)
	if err != nil {
		return schemas.PipelineSpec{}, err
	}
	spec, err := client.ParsePipeline(body, format)
	if err == nil {
		spec, err = client.SetVars(spec, vars)
	}
	if err == nil { // the structural checks of agentmesh run, then the orchestrator's against the live agents
		_, _, err = pipeline.Validate(spec, lookup, meshroute.NewRouter())
	}
	if err != nil {
		return spec, pipelineError(err)
	}
	return spec, nil
}

// pipelineFormat reads the body's format from its media type: YAML
// (application/yaml, application/x-yaml, text/yaml; the default) or JSON.
func pipelineFormat(contentType string) (string, error) {
	if contentType == "" {
		return "yaml", nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fail(schemas.CodeInvalidRequest, "Content-Type %q: %v; send application/yaml or application/json", contentType, err)
	}
	switch mt {
	case "application/json":
		return "json", nil
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "text/plain":
		return "yaml", nil
	}
	return "", &apiError{Status: http.StatusUnsupportedMediaType, Code: schemas.CodeInvalidRequest,
		Message: fmt.Sprintf("Content-Type %q: a pipeline is sent as application/yaml or application/json", mt)}
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
