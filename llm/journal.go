package llm

import (
	"context"

	"github.com/agentmesh/agentmesh/schemas"
)

// StepModel is the step name of a model call made in a task: its journal
// key is <task>.model.<n> (docs/durability.md).
const StepModel = "model"

// modelStep is what the step journal records of a model call: the answer
// and what it used, so that a replayed call reports the usage it had.
type modelStep struct {
	Response Response `json:"response"`
	Usage    Usage    `json:"usage"`
}

// journaled makes the call a step of the task ctx belongs to
// (schemas.Step): the first time the model is called and its answer
// recorded; on a redelivery of the task the recorded answer is returned,
// and sent to onDelta as one delta of its text and one per tool call,
// without a call, a span, a budget charge or a rate slot. Outside a task
// the call is made as it is. A call that fails records nothing.
func (c *Client) journaled(ctx context.Context, req Request, onDelta func(Delta)) (Response, Usage, error) {
	if !schemas.Journaled(ctx) {
		return c.traced(ctx, req, onDelta)
	}
	called := false
	var usage Usage // of a call that failed, which records nothing
	rec, err := schemas.Step(ctx, StepModel, func(ctx context.Context, _ string) (modelStep, error) {
		called = true
		resp, u, err := c.traced(ctx, req, onDelta)
		usage = u
		return modelStep{Response: resp, Usage: u}, err
	})
	if err != nil {
		return Response{}, usage, err
	}
	if !called && onDelta != nil {
		replayDeltas(rec.Response.Message, onDelta)
	}
	return rec.Response, rec.Usage, nil
}

// replayDeltas sends a recorded answer to onDelta as the model would have:
// its text, then each tool call whole.
func replayDeltas(m Message, onDelta func(Delta)) {
	if m.Content != "" {
		onDelta(Delta{Text: m.Content})
	}
	for i, tc := range m.ToolCalls {
		onDelta(Delta{Call: i, ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
}
