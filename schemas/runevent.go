package schemas

import "time"

// Run statuses.
const (
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"
	// RunCancelled is a run that ended because a cancel request stopped
	// one of its steps (that step failed with code cancelled; see POST
	// /api/runs/{id}/cancel). Runs stored before this status say failed.
	RunCancelled = "cancelled"
)

// RunEnded reports whether a run status is one a run ends with.
func RunEnded(status string) bool {
	return status == RunCompleted || status == RunFailed || status == RunCancelled
}

// Step statuses. A step is pending until its wave starts, running from the
// moment it is dispatched until its result is applied, then completed,
// failed or skipped (a dependency did not complete).
const (
	StepPending   = "pending"
	StepRunning   = "running"
	StepWaiting   = "waiting" // an approval or input step waits for a person
	StepCompleted = "completed"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
)

// StepEvent is the data of an io.agentmesh.pipeline.step.* event
// (step-event.schema.json).
type StepEvent struct {
	RunID      string                   `json:"runid"`
	Step       string                   `json:"step"`
	Agent      string                   `json:"agent"`
	Kind       string                   `json:"kind,omitempty"` // the step's kind (agent, router, ...)
	Status     string                   `json:"status"`
	Wave       int                      `json:"wave"`
	Attempt    int                      `json:"attempt,omitempty"`
	TaskID     string                   `json:"taskid,omitempty"`
	Summary    string                   `json:"summary,omitempty"`
	Error      string                   `json:"error,omitempty"`
	Code       string                   `json:"code,omitempty"` // with status failed: one of the Code constants
	Reason     string                   `json:"reason,omitempty"`
	DurationMS int64                    `json:"duration_ms,omitempty"`
	Outputs    map[string]OutputSummary `json:"outputs,omitempty"`
	// From is the run whose outputs a forked run's step kept (it sent no
	// task); empty for a step that ran.
	From string    `json:"from,omitempty"`
	At   time.Time `json:"at"`
	// Usage is what the step's agent reported when it ended: tokens, cost,
	// model time, and its duration as tool time; zero while it runs.
	Usage
}

// OutputSummary describes one output without its value.
type OutputSummary struct {
	DataType string `json:"data_type"`
	Hint     string `json:"content_type_hint,omitempty"`
	Count    int    `json:"count,omitempty"`
}

// RunEvent is the data of io.agentmesh.pipeline.completed
// (run-event.schema.json).
type RunEvent struct {
	RunID      string `json:"runid"`
	Name       string `json:"name,omitempty"`
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"`
	Code       string `json:"code,omitempty"` // with status failed: one of the Code constants
	Completed  int    `json:"completed"`
	Failed     int    `json:"failed"`
	Skipped    int    `json:"skipped"`
	Steps      int    `json:"steps"`
	DurationMS int64  `json:"duration_ms"`
	Usage             // the sum over the run's steps
	// Origin is the run and step a forked run was forked from.
	Origin *RunOrigin `json:"origin,omitempty"`
}
