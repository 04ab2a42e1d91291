package mcp

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentmesh/agentmesh/agents"
)

// StartFunc starts one agent and returns what stops it; stop blocks until
// the agent has drained.
type StartFunc func(ctx context.Context, a agents.Agent) (stop func(), err error)

// Follow keeps one running agent per tool of the server until ctx ends:
// it starts the agents of the tools listed now (an error starting one stops
// those started and is returned), then, at each notifications/tools/
// list_changed from the server, starts the agents of new tools, stops those
// of removed tools and restarts those whose contract changed. Errors after
// the start are logged. When ctx ends it stops every agent, all at once,
// and returns nil.
func (r *Remote) Follow(ctx context.Context, start StartFunc) error {
	type running struct {
		contract string
		stop     func()
	}
	live := map[string]running{}
	stopAll := func() {
		var wg sync.WaitGroup
		for _, a := range live {
			wg.Go(a.stop)
		}
		wg.Wait()
	}
	apply := func(initial bool) error {
		ags, err := r.Agents(ctx)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, a := range ags {
			c := a.Contract()
			js, _ := json.Marshal(c)
			seen[c.Name] = true
			old, had := live[c.Name]
			if had && old.contract == string(js) {
				continue
			}
			if had {
				old.stop()
				delete(live, c.Name)
			}
			stop, err := start(ctx, a)
			if err != nil {
				if initial {
					return err
				}
				r.log.Error("starting the agent of an MCP tool", "agent", c.Name, "err", err)
				continue
			}
			live[c.Name] = running{contract: string(js), stop: stop}
		}
		for name, a := range live {
			if !seen[name] {
				a.stop()
				delete(live, name)
			}
		}
		return nil
	}
	if err := apply(true); err != nil {
		stopAll()
		return err
	}
	for {
		select {
		case <-ctx.Done():
			stopAll()
			return nil
		case <-r.changed:
			if err := apply(false); err != nil && ctx.Err() == nil {
				r.log.Error("following the MCP server's tools", "err", err)
			}
		}
	}
}
