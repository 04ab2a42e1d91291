package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// Agent is one live agent as GET /api/agents shows it.
type Agent struct {
	Name        string                `json:"name"`
	Description string                `json:"description"`
	Capability  string                `json:"capability,omitempty"`
	Contract    schemas.AgentContract `json:"contract"`
	Instances   []Instance            `json:"instances"`
	Stats       AgentStats            `json:"stats"`
}

// Instance is one running copy of an agent.
type Instance struct {
	schemas.InstanceInfo
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
}

// AgentStats are an agent's backlog and how its recent tasks went. Backlog
// is nil when the gateway's identity may not read the agent's consumer;
// the rates are nil before any result was seen.
type AgentStats struct {
	Backlog     *uint64  `json:"backlog"`   // tasks stored for the agent that no instance has taken yet
	InFlight    *int     `json:"in_flight"` // tasks taken and not yet acknowledged
	Recent      int      `json:"recent"`    // results the rates are computed over
	SuccessRate *float64 `json:"success_rate"`
	P50MS       *int64   `json:"p50_ms"`
	// Versions are the same recent results by the version that answered
	// (answers to a rollout's shadow copies apart, and not in the rates
	// above), when some carry a version: what a rollout is judged by.
	Versions []schemas.VersionStats `json:"versions,omitempty"`
	// Rollout is the agent's rollout (agentmesh rollout), if any.
	Rollout *schemas.Rollout `json:"rollout,omitempty"`
}

func (g *Gateway) handleAgents(w http.ResponseWriter, r *http.Request, c *conn) error {
	infos := c.reg.Agents()
	out := make([]Agent, len(infos))
	var wg sync.WaitGroup // each agent's backlog is a round trip: ask for all at once
	for i, info := range infos {
		wg.Go(func() { out[i] = g.agentView(r.Context(), c, info) })
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (g *Gateway) handleAgent(w http.ResponseWriter, r *http.Request, c *conn) error {
	name := r.PathValue("name")
	if err := bus.ValidateAgentName(name); err != nil {
		return fail(schemas.CodeInvalidInput, "agent name %q: %v", name, err)
	}
	info, ok := c.reg.Lookup(name)
	if !ok {
		return fail(schemas.CodeUnknownAgent, "no live agent %q; GET /api/agents lists those running", name)
	}
	writeJSON(w, http.StatusOK, g.agentView(r.Context(), c, info))
	return nil
}

// agentView joins the registry's view of an agent with its heartbeats, its
// consumer's backlog and its recent results.
func (g *Gateway) agentView(ctx context.Context, c *conn, info client.AgentInfo) Agent {
	name := info.Contract.Name
	a := Agent{Name: name, Description: info.Contract.Description, Capability: info.Contract.Capability,
		Contract: info.Contract, Instances: make([]Instance, 0, len(info.Instances))}
	for _, in := range info.Instances {
		hb, _ := c.reg.LastHeartbeat(name, in.ID)
		a.Instances = append(a.Instances, Instance{InstanceInfo: in, LastHeartbeat: hb})
	}
	if c.store != nil { // a client may not read other consumers
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if cons, err := c.res.Tasks.Consumer(ctx, name); err == nil {
			if ci, err := cons.Info(ctx); err == nil {
				a.Stats.Backlog, a.Stats.InFlight = &ci.NumPending, &ci.NumAckPending
			}
		}
	}
	if g.stats != nil {
		g.stats.fill(name, &a.Stats)
	}
	if c.res.Rollouts != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if e, err := c.res.Rollouts.Get(ctx, name); err == nil {
			var r schemas.Rollout
			if json.Unmarshal(e.Value(), &r) == nil {
				a.Stats.Rollout = &r
			}
		}
	}
	return a
}
