package schemas

import "time"

// TaskRequest is the data of an io.agentmesh.task.requested event: the typed
// inputs by the contract's input names, free parameters, an optional
// natural-language instruction and the agent's time budget.
type TaskRequest struct {
	Inputs      map[string]TypedValue `json:"inputs,omitempty"`
	Params      map[string]any        `json:"params,omitempty"`
	Instruction string                `json:"instruction,omitempty"`
	TimeoutMS   int64                 `json:"timeout_ms,omitempty"`
	// Budget is what is left of the run's budget when the task was sent:
	// the agent's model calls for the task stop at it (docs/llm.md#budgets).
	Budget *Budget `json:"budget,omitempty"`
	// BudgetKey, with Budget, is the key of the ledger in the mesh's LLM
	// bucket that Budget's limits hold: the model calls of every step of
	// one pipeline wave (RunBudgetKey), or of one chat turn and the agents
	// its tool calls run (TurnBudgetKey), reserve and settle there
	// together, so they share what is left rather than each spending all
	// of it. Empty: the task's calls count on their own (ValidBudgetKey).
	BudgetKey string `json:"budget_key,omitempty"`
}

// TaskProgress is the data of an io.agentmesh.task.progress event.
type TaskProgress struct {
	TaskID  string  `json:"taskid,omitempty"`
	Agent   string  `json:"agent,omitempty"`
	Message string  `json:"message"`
	Percent float64 `json:"percent,omitempty"`
	// Step is set on a chat turn's "thinking" note: the model call it
	// starts, the step of the mesh.delta pieces that call writes, so a
	// reader can show the note before them.
	Step int `json:"step,omitempty"`
}

// DefaultTaskTimeout is the time budget of a task whose step, contract and
// request name none.
const DefaultTaskTimeout = 60 * time.Second
