// Package prompt is the PromptAgent: a declarative LLM agent defined in a
// YAML file (name, description, capability, system prompt, typed inputs and
// outputs, a params schema). It is how users add their own LLM agents to the
// mesh without writing Go: `agentmesh agent --config FILE`.
package prompt
