package schemas

import (
	"context"
	"time"
)

// Observer is the one seam where metrics, tracing, structured logs and
// policy hang on the mesh. The agent runtime and the orchestrator call it at
// every transition, each from one place: a task taken from the bus
// (TaskReceived), handed to the agent (TaskStarted) and ended
// (TaskFinished); a pipeline step or run changing status (StepChanged,
// RunChanged); a model call (LLMCalled).
//
// Observe is called synchronously on the path it observes, so it must be
// quick and must not block; it must be safe for concurrent use. An
// observer that needs more than one kind switches on the type:
//
//	func (m *metrics) Observe(ctx context.Context, o schemas.Observation) {
//		switch o := o.(type) {
//		case schemas.TaskFinished:
//			m.tasks.WithLabelValues(o.Agent, o.Outcome).Inc()
//		}
//	}
type Observer interface {
	Observe(ctx context.Context, o Observation)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(ctx context.Context, o Observation)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, o Observation) { f(ctx, o) }

// Observers fans one observation out to each of obs in order; nil and
// NopObserver entries are skipped. With no observers it returns
// NopObserver.
func Observers(obs ...Observer) Observer {
	var list []Observer
	for _, o := range obs {
		if _, nop := o.(NopObserver); o != nil && !nop {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return NopObserver{}
	case 1:
		return list[0]
	}
	return fanOut(list)
}

type fanOut []Observer

func (f fanOut) Observe(ctx context.Context, o Observation) {
	for _, ob := range f {
		ob.Observe(ctx, o)
	}
}

// NopObserver observes nothing; it is the default everywhere.
type NopObserver struct{}

// Observe does nothing.
func (NopObserver) Observe(context.Context, Observation) {}

// Observation is one of TaskReceived, TaskStarted, TaskFinished,
// StepChanged, RunChanged, LLMCalled and ChatTurnEnded.
type Observation interface{ observation() }

// TaskRef names a task and what it belongs to, as its event's extension
// attributes say.
type TaskRef struct {
	Agent          string
	TaskID         string
	RunID          string
	StepID         string
	ConversationID string
	TraceParent    string
	Direct         bool // taken from the agent's micro endpoint (mesh.call.<agent>), not from its stream
}

// Task outcomes in TaskFinished.Outcome.
const (
	OutcomeCompleted  = "completed"   // result published, Success true
	OutcomeFailed     = "failed"      // result published, Success false
	OutcomeRetry      = "retry"       // handed back to the stream for redelivery
	OutcomeDeadLetter = "dead_letter" // given up: dead-lettered, failed result published
	OutcomeDuplicate  = "duplicate"   // a redelivery of a task this instance answered: acked again
)

// TaskReceived: a task event was taken from the bus and decoded as far as
// it goes, before it is validated; each is followed by exactly one
// TaskFinished. Delivery counts from 1 (above 1: a redelivery).
type TaskReceived struct {
	TaskRef
	Delivery int
	At       time.Time
}

// TaskStarted: the task passed validation and its handler runs.
type TaskStarted struct {
	TaskRef
	Delivery int
	At       time.Time
}

// TaskFinished: a task ended on this instance with Outcome (Outcome*),
// Code the error code of a failure, Duration from receipt to the end, and
// the tokens and cost the agent reported.
type TaskFinished struct {
	TaskRef
	Outcome  string
	Code     string
	Error    string
	Duration time.Duration
	Metrics  Metrics
}

// StepChanged: a pipeline step changed status (running, completed,
// failed, skipped). Kind is the step's kind ("agent" today).
type StepChanged struct {
	RunID    string
	StepID   string
	Kind     string
	Agent    string
	Status   string
	Wave     int
	Error    string
	Duration time.Duration // dispatch to end; 0 until it ends
	Metrics  Metrics
}

// RunChanged: a pipeline run started or ended.
type RunChanged struct {
	RunID    string
	Name     string
	Status   string
	Error    string
	Steps    int
	Duration time.Duration // 0 until it ends
	Usage    Usage         // the sum over the run's steps; zero until it ends
}

// LLMCalled: one model call of a chat turn ended, with its tokens and
// cost (Err set when it failed).
type LLMCalled struct {
	ConversationID string
	Model          string
	Tokens         Tokens
	Cost           float64
	Duration       time.Duration
	Err            error
}

// ChatTurnEnded: a chat turn ended in State with its steps, tokens and
// cost.
type ChatTurnEnded struct {
	ConversationID string
	State          string
	Steps          int
	Tokens         Tokens
	Cost           float64
	Duration       time.Duration
}

func (TaskReceived) observation()  {}
func (TaskStarted) observation()   {}
func (TaskFinished) observation()  {}
func (StepChanged) observation()   {}
func (RunChanged) observation()    {}
func (LLMCalled) observation()     {}
func (ChatTurnEnded) observation() {}
