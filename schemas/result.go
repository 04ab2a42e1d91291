package schemas

import "fmt"

// Error codes. Agents put them in AgentResult.Error.Code; the orchestrator
// puts them in ChatResponse.Code, RunEvent.Code and StepEvent.Code of the
// final event of a request it could not serve. docs/errors.md says what each
// means and what the sender should do. The set is open: treat an unknown
// code as a plain failure.
const (
	CodeInvalidInput    = "invalid_input"     // an input failed the contract or its type's schema
	CodeInvalidParams   = "invalid_params"    // params failed the contract's params schema
	CodeMalformedEvent  = "malformed_event"   // the task event itself could not be decoded
	CodeMalformedResult = "malformed_result"  // the orchestrator could not decode an agent's result
	CodeTimeout         = "timeout"           // the task passed its deadline
	CodeCancelled       = "cancelled"         // a cancel request stopped the task
	CodeAgentError      = "agent_error"       // Execute returned an error
	CodeNotFound        = "not_found"         // a referenced file or slot does not exist
	CodeUnavailable     = "unavailable"       // no agent can take the task
	CodeExhausted       = "retries_exhausted" // every delivery failed with a retryable error

	CodeInvalidRequest  = "invalid_request"  // a chat request the mesh cannot serve (an empty or oversized message)
	CodeInvalidID       = "invalid_id"       // a conversation, run or task id that cannot be a subject token
	CodeInvalidPipeline = "invalid_pipeline" // a pipeline spec that fails validation
	CodeUnknownAgent    = "unknown_agent"    // no agent of that name is registered, nor has one ever consumed tasks
	CodeTooLarge        = "too_large"        // the request or the state it leads to exceeds a size limit
	CodeCorruptState    = "corrupt_state"    // a stored conversation or run value does not decode
	CodeStepFailed      = "step_failed"      // a pipeline run ended because some of its steps failed or were skipped
	CodeInvalidContract = "invalid_contract" // an announcement the registry left out: its contract fails validation or names another agent
	CodeInternal        = "internal"         // the mesh itself failed (KV or stream trouble); send the request again
	CodeNotWaiting      = "not_waiting"      // a resolve names a run or step that is not waiting for a person
	CodeRejected        = "rejected"         // a person (or an approval's default on timeout) rejected an approval step
)

// Codes of agent-to-agent calls and of agents that ask a person (a
// separate block, so the one above keeps its alignment).
const (
	CodeCallDepth        = "call_depth"        // an agent-to-agent call would go deeper than the chain's depth limit
	CodeCallFanout       = "call_fanout"       // a task made more agent-to-agent calls than its fan-out limit
	CodeInputRequired    = "input_required"    // the agent needs more from the user; the message is its question (a chat turn ends input_required)
	CodeApprovalRequired = "approval_required" // the agent asks a person to approve before a side effect; the message says what it would do
	CodeLimitExceeded    = "limit_exceeded"    // a request over a documented limit (see Limits); the message names the limit, its bound and the value
	CodeBudgetExceeded   = "budget_exceeded"   // a model call would cross a budget (a turn's, a run's, a client's period): it was not made; the message names the limit, the spend and the ask
)

// Codes of the mesh's own limits.
const (
	CodeBacklogFull = "backlog_full" // a stream (MESH_TASKS, MESH_REQUESTS) or the account is at a limit: the request was not stored
)

// Codes of model answers and of the policy seam (docs/llm.md).
const (
	CodeInvalidOutput = "invalid_output" // a model's answer failed its declared outputs' schemas, again after being told why; nothing was stored
	CodeRefused       = "policy_refused" // a policy refused a model call, a tool call or an agent call; the message is its reason
)

// CodeStepTooLarge: a step's result over the journal's value limit
// (docs/durability.md); its effect happened but could not be recorded.
const CodeStepTooLarge = "step_too_large"

// CodeForbidden: a client's request about a run or conversation another
// client owns (docs/security.md).
const CodeForbidden = "forbidden"

// ResultError is the error half of a failed AgentResult. It crosses the bus,
// so errors.Is matches on the code: errors.Is(err, &ResultError{Code: CodeTimeout}).
type ResultError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable,omitempty"`
}

func (e *ResultError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// ErrorCode is the error's code (see CodeOf).
func (e *ResultError) ErrorCode() string { return e.Code }

// Is matches another *ResultError with the same code.
func (e *ResultError) Is(target error) bool {
	t, ok := target.(*ResultError)
	return ok && t.Code == e.Code
}

// Tokens counts LLM tokens.
type Tokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
}

// Add returns the sum of two counts.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{Prompt: t.Prompt + o.Prompt, Completion: t.Completion + o.Completion}
}

// Metrics describe one execution: its duration from receipt to result,
// the delivery it was, and what the models it called consumed: tokens,
// their cost in US dollars, and the time spent waiting for them.
type Metrics struct {
	DurationMS int64   `json:"duration_ms"`
	Attempt    int     `json:"attempt,omitempty"`
	Tokens     Tokens  `json:"tokens,omitzero"`
	Cost       float64 `json:"cost,omitempty"`
	ModelMS    int64   `json:"model_ms,omitempty"`
}

// Usage returns what the execution consumed as a Usage: its tokens, cost
// and model time, and its duration as tool time.
func (m Metrics) Usage() Usage {
	return Usage{Tokens: m.Tokens, Cost: m.Cost, ModelMS: m.ModelMS, ToolMS: m.DurationMS}
}

// Usage is what work consumed: LLM tokens, their cost in US dollars (priced
// by the shared table of package llm/pricing), the time spent waiting for
// models (model_ms) and the time agents spent on tasks (tool_ms, as they
// report it in metrics.duration_ms). Totals add these over every model
// call and every agent task; times of work done in parallel add up too.
type Usage struct {
	Tokens  Tokens  `json:"tokens"`
	Cost    float64 `json:"cost"`
	ModelMS int64   `json:"model_ms"`
	ToolMS  int64   `json:"tool_ms"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{Tokens: u.Tokens.Add(o.Tokens), Cost: u.Cost + o.Cost, ModelMS: u.ModelMS + o.ModelMS, ToolMS: u.ToolMS + o.ToolMS}
}

// Metrics returns the model half of u as an execution's metrics (tokens,
// cost, model time), with its tool time as the duration: what an agent
// whose model reported u puts in its result.
func (u Usage) Metrics() Metrics {
	return Metrics{Tokens: u.Tokens, Cost: u.Cost, ModelMS: u.ModelMS, DurationMS: u.ToolMS}
}

// AgentResult is the data of a task.completed or task.failed event.
type AgentResult struct {
	Success    bool                  `json:"success"`
	Agent      string                `json:"agent"`
	Version    string                `json:"version,omitempty"` // the agent's contract version that produced it
	Shadow     bool                  `json:"shadow,omitempty"`  // the answer to a shadow copy (a rollout in shadow mode): recorded, delivered to no one
	Capability string                `json:"capability,omitempty"`
	Summary    string                `json:"summary,omitempty"`
	Outputs    map[string]TypedValue `json:"outputs,omitempty"`
	Error      *ResultError          `json:"error,omitempty"`
	Metrics    Metrics               `json:"metrics,omitzero"`
}

// Failure builds a failed result.
func Failure(agent, code, message string, retryable bool) AgentResult {
	return AgentResult{Agent: agent, Error: &ResultError{Code: code, Message: message, Retryable: retryable}}
}

// Err returns the result's error, or nil when it succeeded.
func (r AgentResult) Err() error {
	if r.Success {
		return nil
	}
	if r.Error == nil {
		return &ResultError{Code: CodeAgentError, Message: "agent " + r.Agent + " failed without saying why"}
	}
	return r.Error
}
