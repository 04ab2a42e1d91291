package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// maxListedFiles bounds how many files of one FILE_IDS input are described
// to the model; the rest are counted.
const maxListedFiles = 200

// maxMetadataValue bounds, in characters, each metadata value described to
// the model.
const maxMetadataValue = 200

// Option configures a PromptAgent.
type Option func(*Agent)

// WithResolver lets the agent describe FILE_IDS inputs to the model with
// each file's name, type, size and metadata, not only its ID.
func WithResolver(r resolvers.FileResolver) Option {
	return func(a *Agent) { a.files = r }
}

// WithTypes sets the data type registry structured outputs are checked
// against (default schemas.DefaultRegistry).
func WithTypes(r *schemas.DataTypeRegistry) Option {
	return func(a *Agent) { a.types = r }
}

// Agent is a PromptAgent: the contract of its Config, executed by one call
// of the text model.
type Agent struct {
	cfg      Config
	contract schemas.AgentContract
	model    llmiface.TextModel
	files    resolvers.FileResolver
	types    *schemas.DataTypeRegistry // checks structured outputs
	guard    *llm.Guard                // policies of model and tool calls; nil: none

	toolModel ToolModel // with tools: runs the tool loop (WithTools)
	tools     []Tool
}

var _ agents.Agent = (*Agent)(nil)

// New returns the agent a validated config declares. model answers its
// tasks; a nil model makes every task fail with an error saying how to
// configure an LLM. Options: WithResolver, WithTools, WithTypes.
//
// An agent with one TEXT output gets the model's reply as it. Any other
// outputs make the answer structured (see Config.Structured and
// executeStructured): model must then take whole requests, as an
// *llm.Client does. A model that streams (an *llm.Client) sends its text
// as the task writes it (agents.ReportText).
func New(cfg Config, model llmiface.TextModel, opts ...Option) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, contract: cfg.Contract(), model: model, types: schemas.DefaultRegistry()}
	if !cfg.Policy.Empty() {
		ps, err := cfg.Policy.Policies()
		if err != nil {
			return nil, err
		}
		a.guard = llm.NewGuard(ps)
	}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// Contract is the contract the config declares.
func (a *Agent) Contract() schemas.AgentContract { return a.contract }

// Config is the agent's definition.
func (a *Agent) Config() Config { return a.cfg }

// Execute renders the inputs and params into one user message, sends it with
// the system prompt to the model and returns the reply as the first output.
func (a *Agent) Execute(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	if a.chatModel() == nil {
		return schemas.Failure(a.cfg.Name, schemas.CodeUnavailable, fmt.Sprintf(
			"PromptAgent %s needs an LLM: set OPENAI_API_KEY/OPENAI_BASE_URL (and AGENTMESH_MODEL or the config's model), or AGENTMESH_MODEL=anthropic:MODEL with ANTHROPIC_API_KEY (gemini:MODEL with GEMINI_API_KEY), and restart it",
			a.cfg.Name), false), nil
	}
	for _, in := range a.cfg.Inputs {
		if in.Required && !ec.Has(in.Name) {
			return schemas.Failure(a.cfg.Name, schemas.CodeInvalidInput, fmt.Sprintf("input %q (%s) is required", in.Name, in.DataType), false), nil
		}
	}
	ctx = withApproval(ctx, ec)
	user, err := a.render(ctx, ec)
	if err != nil {
		return schemas.Failure(a.cfg.Name, schemas.CodeInvalidInput, err.Error(), false), nil
	}
	if a.cfg.Structured() {
		return a.executeStructured(ctx, user)
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: a.cfg.SystemPrompt}, {Role: llm.RoleUser, Content: user}}
	msg, _, usage, err := a.converse(ctx, a.chatModel(), msgs, nil)
	if errors.Is(err, ErrToolSteps) {
		return schemas.Failure(a.cfg.Name, schemas.CodeAgentError, err.Error(), false), nil
	}
	if res, ok := a.policyFailure(err); ok {
		return res, nil
	}
	if err != nil {
		return a.modelFailed(ctx, err)
	}
	reply := strings.TrimSpace(msg.Content)
	out := a.cfg.Outputs[0]
	value := schemas.TextValue(reply, a.cfg.Name)
	value.ContentTypeHint = out.ContentTypeHint
	return schemas.AgentResult{
		Success:    true,
		Agent:      a.cfg.Name,
		Capability: a.cfg.Capability,
		Summary:    a.cfg.Name + " answered in " + schemas.Plural(len([]rune(reply)), "character", "characters"),
		Outputs:    map[string]schemas.TypedValue{out.Name: value},
		Metrics:    usage.Metrics(),
	}, nil
}

// modelFailed is the outcome of a task whose model call failed: the
// context's error when the task ended, the budget's refusal (code
// budget_exceeded) and the step journal's (step_too_large) as they are,
// else a retryable error.
func (a *Agent) modelFailed(ctx context.Context, err error) (schemas.AgentResult, error) {
	if ctx.Err() != nil {
		return schemas.AgentResult{}, ctx.Err()
	}
	if errors.Is(err, llm.ErrBudgetExceeded) {
		// Not tried again: the budget is as spent on the next delivery.
		return schemas.AgentResult{}, err
	}
	if tooLarge := (&schemas.ResultError{Code: schemas.CodeStepTooLarge}); errors.Is(err, tooLarge) {
		return schemas.AgentResult{}, err // the journal refused a step's result: trying again would not help
	}
	return schemas.AgentResult{}, agents.Retryable(fmt.Errorf("the LLM did not answer: %w", err))
}

// chatModel is the model of the agent's calls, behind its guard: the tool
// model when the agent has tools, else the text model, which takes whole
// requests when it is a ToolModel (an *llm.Client is) and is given the
// system prompt and the last user message otherwise (it then takes no
// output schema: structured outputs rest on the validated retry); nil when
// there is none.
func (a *Agent) chatModel() ToolModel {
	if len(a.tools) > 0 && a.toolModel != nil {
		return a.guarded(a.toolModel)
	}
	switch m := a.model.(type) {
	case nil:
		return nil
	case ToolModel:
		return a.guarded(m)
	default:
		return a.guarded(textOnly{m})
	}
}

// converse runs one answer of the model from msgs: the tool loop when the
// agent has tools, else one call. It returns the answer, the conversation
// with it, and what the calls used.
func (a *Agent) converse(ctx context.Context, model ToolModel, msgs []llm.Message, output *llm.OutputSchema) (llm.Message, []llm.Message, schemas.Usage, error) {
	if len(a.tools) > 0 {
		return a.runTools(ctx, model, msgs, output)
	}
	resp, usage, err := a.chat(ctx, model, llm.Request{Model: a.cfg.Model, Messages: msgs, Output: output})
	if err != nil {
		return llm.Message{}, msgs, usage.Report(), err
	}
	return resp.Message, append(msgs, resp.Message), usage.Report(), nil
}

// render writes the user message: the instruction, each declared input
// (TEXT as text, FILE_IDS as IDs with what is known of each file, other
// types as JSON), then the params as JSON.
func (a *Agent) render(ctx context.Context, ec *schemas.ExecutionContext) (string, error) {
	var b strings.Builder
	if ins := strings.TrimSpace(ec.Instruction()); ins != "" {
		fmt.Fprintf(&b, "Instruction: %s\n\n", ins)
	}
	for _, in := range a.cfg.Inputs {
		if !ec.Has(in.Name) {
			continue
		}
		v, err := ec.Read(in.Name, in.DataType)
		if err != nil {
			return "", fmt.Errorf("input %q: %v", in.Name, err)
		}
		fmt.Fprintf(&b, "## Input %s (%s)\n", in.Name, in.DataType)
		switch in.DataType {
		case schemas.TypeText:
			s, err := v.Text()
			if err != nil {
				return "", fmt.Errorf("input %q: %v", in.Name, err)
			}
			b.WriteString(s)
			b.WriteString("\n\n")
		case schemas.TypeFileIDs:
			fc, err := v.Files()
			if err != nil {
				return "", fmt.Errorf("input %q: %v", in.Name, err)
			}
			a.renderFiles(ctx, &b, fc)
		default:
			var pretty any
			if err := json.Unmarshal(v.Value, &pretty); err != nil {
				return "", fmt.Errorf("input %q: %v", in.Name, err)
			}
			js, _ := json.MarshalIndent(pretty, "", "  ")
			b.Write(js)
			b.WriteString("\n\n")
		}
	}
	if p := ec.Params(); len(p) > 0 {
		js, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return "", fmt.Errorf("params: %v", err)
		}
		fmt.Fprintf(&b, "## Parameters\n%s\n", js)
	}
	return strings.TrimSpace(b.String()), nil
}

func (a *Agent) renderFiles(ctx context.Context, b *strings.Builder, fc schemas.FileCollection) {
	ids := fc.IDs()
	fmt.Fprintf(b, "%s (%s)\n", schemas.Plural(fc.Count(), "file", "files"), fc.ContentType())
	for i, id := range ids {
		if i == maxListedFiles {
			fmt.Fprintf(b, "- ... and %d more\n", len(ids)-maxListedFiles)
			break
		}
		if a.files == nil {
			fmt.Fprintf(b, "- %s\n", id)
			continue
		}
		ref, err := a.files.ResolveMetadata(ctx, id)
		if err != nil {
			fmt.Fprintf(b, "- %s (cannot be read: %v)\n", id, err)
			continue
		}
		fmt.Fprintf(b, "- %s: %s, %s, %d bytes", id, orEmpty(ref.Filename), orEmpty(ref.MediaType), ref.Size)
		for _, k := range slices.Sorted(maps.Keys(ref.Metadata)) {
			fmt.Fprintf(b, ", %s=%s", k, schemas.Clip(ref.Metadata[k], maxMetadataValue))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
