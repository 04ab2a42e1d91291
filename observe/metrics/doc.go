// Package metrics turns what the mesh observes into Prometheus metrics. An
// Observer (a schemas.Observer) hangs on the agent runtime
// (agents.WithObserver) and on the orchestrator (orchestrator.WithObserver)
// and counts tasks, pipeline runs and steps, chat turns, tokens and cost; a
// MeshCollector reads the live agents and their consumers' backlog at scrape
// time; an Endpoint serves /metrics, /healthz, /readyz and, when asked,
// /debug/pprof/ on one address. Each process keeps its own registry
// (NewRegistry), not the global one.
package metrics
