package gateway

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/schemas"
)

func (g *Gateway) handleRuns(w http.ResponseWriter, r *http.Request, c *conn) error {
	store, err := c.needStore()
	if err != nil {
		return err
	}
	return writeList(w, r, "runs", runFields, store.RecentRuns)
}

func (g *Gateway) handleRun(w http.ResponseWriter, r *http.Request, c *conn) error {
	run, err := g.loadRun(r, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// loadRun reads the run named by the path's {id}.
func (g *Gateway) loadRun(r *http.Request, c *conn) (*stateview.RunState, error) {
	id := r.PathValue("id")
	if err := bus.ValidateToken("run id", id); err != nil {
		return nil, fail(schemas.CodeInvalidID, "%v", err)
	}
	store, err := c.needStore()
	if err != nil {
		return nil, err
	}
	run, err := store.Run(r.Context(), id)
	if errors.Is(err, stateview.ErrNotFound) {
		return nil, fail(schemas.CodeNotFound, "no run %q; GET /api/runs lists them", id)
	}
	if err != nil {
		return nil, meshError("reading run "+id, err)
	}
	return run, nil
}

func (g *Gateway) handleRunEvents(w http.ResponseWriter, r *http.Request, c *conn) error {
	id := r.PathValue("id")
	if err := bus.ValidateToken("run id", id); err != nil {
		return fail(schemas.CodeInvalidID, "%v", err)
	}
	return g.followID(w, r, c, id)
}

func (g *Gateway) handleRunGraph(w http.ResponseWriter, r *http.Request, c *conn) error {
	run, err := g.loadRun(r, c)
	if err != nil {
		return err
	}
	graph, err := LayoutRun(r.Context(), run)
	if err != nil {
		return fail(schemas.CodeInternal, "laying out run %s: %v", run.ID, err)
	}
	writeJSON(w, http.StatusOK, graph)
	return nil
}

// intParam reads a whole-number query parameter of at least 0.
func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fail(schemas.CodeInvalidRequest, "?%s=%s: give a whole number, 0 or more", name, v)
	}
	return n, nil
}
