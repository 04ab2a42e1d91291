package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
)

// builtinAgent is an agent this binary can run with `agentmesh agent NAME`.
type builtinAgent struct {
	name    string
	summary string
	build   func(ctx context.Context, m *mesh) (agents.Agent, error)
}

// builtins are the built-in agents by name; each agent's file adds itself
// with registerBuiltin from an init function.
var builtins = map[string]builtinAgent{}

// registerBuiltin adds a built-in agent. build may use the mesh connection
// (the object store, say) to construct the agent.
func registerBuiltin(name, summary string, build func(ctx context.Context, m *mesh) (agents.Agent, error)) {
	if _, dup := builtins[name]; dup {
		panic(fmt.Sprintf("built-in agent %s registered twice", name))
	}
	builtins[name] = builtinAgent{name: name, summary: summary, build: build}
}

// builtinNames lists the built-in agents, sorted.
func builtinNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func init() {
	registerBuiltin(text.Name, "transforms TEXT: upper, lower, reverse, title, wordcount",
		func(context.Context, *mesh) (agents.Agent, error) { return text.New(), nil })
}
