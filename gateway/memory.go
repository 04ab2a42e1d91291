package gateway

import (
	"errors"
	"net/http"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/memory"
	"github.com/agentmesh/agentmesh/schemas"
)

// handleMemory lists the facts the chat remembers across conversations
// (docs/knowledge.md#memory): ?identity= one client identity's, else
// every identity's, oldest first. Only credentials that may read state
// (admin, orchestrator) may list them, as `agentmesh memory ls`.
func (g *Gateway) handleMemory(w http.ResponseWriter, r *http.Request, c *conn) error {
	if _, err := c.needStore(); err != nil {
		return err
	}
	who := r.URL.Query().Get("identity")
	if who != "" {
		if err := bus.ValidateToken("identity", who); err != nil {
			return fail(schemas.CodeInvalidID, "query identity: %v", err)
		}
	}
	facts, err := memory.New(c.js, c.names).List(r.Context(), who)
	if err != nil {
		return meshError("listing memory", err)
	}
	if facts == nil {
		facts = []memory.Fact{}
	}
	writeJSON(w, http.StatusOK, facts)
	return nil
}

// handleForget removes one remembered fact, as `agentmesh memory rm`.
func (g *Gateway) handleForget(w http.ResponseWriter, r *http.Request, c *conn) error {
	if _, err := c.needStore(); err != nil {
		return err
	}
	who, id := r.PathValue("identity"), r.PathValue("id")
	for kind, v := range map[string]string{"identity": who, "fact id": id} {
		if err := bus.ValidateToken(kind, v); err != nil {
			return fail(schemas.CodeInvalidID, "path %s: %v", kind, err)
		}
	}
	err := memory.New(c.js, c.names).Remove(r.Context(), who, id)
	if errors.Is(err, memory.ErrNotFound) {
		return fail(schemas.CodeNotFound, "%v", err)
	}
	if err != nil {
		return meshError("removing a fact", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"removed": id, "identity": who})
	return nil
}
