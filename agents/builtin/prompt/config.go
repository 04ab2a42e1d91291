package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// ErrInvalidConfig reports a PromptAgent config that fails Validate.
var ErrInvalidConfig = errors.New("invalid PromptAgent config")

// Input declares one input of a PromptAgent, as in a contract.
type Input struct {
	Name            string `yaml:"name" json:"name"`
	DataType        string `yaml:"data_type" json:"data_type"`
	Description     string `yaml:"description" json:"description,omitempty"`
	Required        bool   `yaml:"required" json:"required,omitempty"`
	ContentTypeHint string `yaml:"content_type_hint" json:"content_type_hint,omitempty"`
}

// Output declares one output of a PromptAgent. A single TEXT output
// receives the model's reply; any other outputs, of any data types, are
// members of one JSON object the model answers with, each checked against
// its type's schema (Config.Structured). Description tells the model what
// to put in it.
type Output struct {
	Name            string `yaml:"name" json:"name"`
	DataType        string `yaml:"data_type" json:"data_type"`
	Description     string `yaml:"description" json:"description,omitempty"`
	Mergeable       bool   `yaml:"mergeable" json:"mergeable,omitempty"`
	ContentTypeHint string `yaml:"content_type_hint" json:"content_type_hint,omitempty"`
}

// Config is a PromptAgent's definition, written as YAML:
//
//	name: HaikuAgent
//	description: Writes a haiku about a text.
//	capability: GENERATION
//	version: 1.0.0
//	system_prompt: You are a poet...
//	inputs:
//	  - {name: text, data_type: TEXT, required: true}
//	outputs:
//	  - {name: haiku, data_type: TEXT}
//	params: {type: object, properties: {mood: {type: string}}}
//	model: gpt-4o-mini   # optional: overrides AGENTMESH_MODEL for this agent
//	mcp:                 # optional: MCP servers whose tools the model may call
//	  - {command: "node server.mjs", tools: [word_count]}
//	  - {url: "http://127.0.0.1:3001/mcp"}
//	max_tool_steps: 8    # optional: model calls per task when it has tools
//	policy:              # optional: llm.PolicyRules around its model and tool calls
//	  refuse_tools: [delete_file]
//	  approve_tools: [send_mail]   # the task ends approval_required until approved: true
//	  redact: [api_keys, emails]   # or regular expressions
type Config struct {
	Name         string          `yaml:"name" json:"name"`
	Description  string          `yaml:"description" json:"description"`
	Capability   string          `yaml:"capability" json:"capability"`
	Version      string          `yaml:"version" json:"version,omitempty"`
	SystemPrompt string          `yaml:"system_prompt" json:"system_prompt"`
	Inputs       []Input         `yaml:"inputs" json:"inputs,omitempty"`
	Outputs      []Output        `yaml:"outputs" json:"outputs"`
	Params       map[string]any  `yaml:"params" json:"params,omitempty"`
	Model        string          `yaml:"model" json:"model,omitempty"`
	TimeoutMS    int64           `yaml:"timeout_ms" json:"timeout_ms,omitempty"`
	MCP          []MCPServer     `yaml:"mcp" json:"mcp,omitempty"`
	MaxToolSteps int             `yaml:"max_tool_steps" json:"max_tool_steps,omitempty"`
	Policy       llm.PolicyRules `yaml:"policy" json:"policy,omitempty"`
}

// MCPServer is an MCP server whose tools a PromptAgent's model may call:
// a command started with stdio, or the URL of a streamable HTTP endpoint;
// Tools, when set, keeps only the tools named.
type MCPServer struct {
	Command string   `yaml:"command" json:"command,omitempty"`
	URL     string   `yaml:"url" json:"url,omitempty"`
	Tools   []string `yaml:"tools" json:"tools,omitempty"`
}

// Load reads and validates a config file. Unknown keys are errors, so a
// misspelt key is caught instead of ignored.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("PromptAgent config: %w", err)
	}
	cfg, err := Parse(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes and validates a YAML config.
func Parse(b []byte) (Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return Config{}, fmt.Errorf("%w: the file is empty", ErrInvalidConfig)
		}
		return Config{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate reports every problem of the config at once: missing name,
// description, capability or system prompt; no outputs; duplicate or unknown-typed inputs and outputs; a params
// schema that does not compile. The error wraps ErrInvalidConfig.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if strings.TrimSpace(c.SystemPrompt) == "" {
		add("system_prompt is empty: say what the model should do")
	}
	if len(c.Outputs) == 0 {
		add("outputs: none declared; declare one TEXT output to receive the reply, or the outputs of any data types the model answers in JSON")
	}
	for i, m := range c.MCP {
		if (m.Command == "") == (m.URL == "") {
			add("mcp[%d]: give exactly one of command (an MCP server started on stdio) and url (a streamable HTTP endpoint)", i)
		}
	}
	if c.MaxToolSteps < 0 {
		add("max_tool_steps is %d: give a positive number, or leave it out for %d", c.MaxToolSteps, DefaultMaxToolSteps)
	}
	if err := c.Policy.Validate(); err != nil {
		add("policy: %v", err)
	}
	contract, err := c.contract()
	if err != nil {
		add("params: %v", err)
	} else if err := contract.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w %q:\n%w", ErrInvalidConfig, c.Name, errors.Join(errs...))
}

// Contract is the agent contract the config declares.
func (c Config) Contract() schemas.AgentContract {
	contract, _ := c.contract()
	return contract
}

func (c Config) contract() (schemas.AgentContract, error) {
	contract := schemas.AgentContract{
		Name:        c.Name,
		Version:     c.Version,
		Capability:  c.Capability,
		Description: c.Description,
		TimeoutMS:   c.TimeoutMS,
	}
	if contract.Version == "" {
		contract.Version = "1.0.0"
	}
	for _, in := range c.Inputs {
		contract.Inputs = append(contract.Inputs, schemas.TypedInput(in))
	}
	for _, out := range c.Outputs {
		contract.Outputs = append(contract.Outputs, schemas.TypedOutput(out))
	}
	if c.Params != nil {
		params := c.Params
		if props, ok := params["properties"].(map[string]any); ok && len(c.Policy.ApproveTools) > 0 {
			// The param a task approved by a person comes back with
			// (approve_tools), whatever else the schema allows.
			params, props = maps.Clone(params), maps.Clone(props)
			props["approved"] = map[string]any{"type": "boolean", "description": "a person approved the tool calls the policy holds"}
			params["properties"] = props
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return contract, fmt.Errorf("cannot be written as JSON Schema: %v", err)
		}
		contract.Params = raw
	}
	return contract, nil
}

func orEmpty(s string) string {
	if s == "" {
		return "empty"
	}
	return s
}
