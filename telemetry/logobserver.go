package telemetry

import (
	"context"
	"log/slog"

	"github.com/agentmesh/agentmesh/schemas"
)

// LogObserver logs each observation to l through Handler, with the
// context it was observed with, so every line carries the task's, run's or
// conversation's ids and trace: a task's end, a step's or run's change and
// a chat turn's end at info (a failure at warn), a model call at debug.
// Receipts and starts of tasks are not logged (their end is).
func LogObserver(l *slog.Logger) schemas.Observer {
	l = Logger(l)
	return schemas.ObserverFunc(func(ctx context.Context, o schemas.Observation) {
		switch o := o.(type) {
		case schemas.TaskFinished:
			level := slog.LevelInfo
			if o.Outcome == schemas.OutcomeFailed || o.Outcome == schemas.OutcomeDeadLetter {
				level = slog.LevelWarn
			}
			if l.Enabled(ctx, level) {
				l.Log(ctx, level, "task finished", "outcome", o.Outcome, "code", o.Code, "error", o.Error,
					"duration_ms", o.Duration.Milliseconds())
			}
		case schemas.StepChanged:
			level := failLevel(o.Status == schemas.StepFailed)
			if l.Enabled(ctx, level) {
				l.Log(ctx, level, "pipeline step "+o.Status, "agent", o.Agent, "wave", o.Wave, "error", o.Error,
					"duration_ms", o.Duration.Milliseconds())
			}
		case schemas.RunChanged:
			level := failLevel(o.Status == schemas.RunFailed)
			if l.Enabled(ctx, level) {
				l.Log(ctx, level, "pipeline run "+o.Status, "name", o.Name, "steps", o.Steps, "error", o.Error,
					"duration_ms", o.Duration.Milliseconds())
			}
		case schemas.ChatTurnEnded:
			level := failLevel(o.State == schemas.ChatFailed)
			if l.Enabled(ctx, level) {
				l.Log(ctx, level, "chat turn ended", "state", o.State, "steps", o.Steps, "prompt_tokens", o.Tokens.Prompt,
					"completion_tokens", o.Tokens.Completion, "cost_usd", o.Cost, "duration_ms", o.Duration.Milliseconds())
			}
		case schemas.LLMCalled:
			if l.Enabled(ctx, slog.LevelDebug) {
				l.DebugContext(ctx, "llm call", "model", o.Model, "prompt_tokens", o.Tokens.Prompt,
					"completion_tokens", o.Tokens.Completion, "cost_usd", o.Cost, "duration_ms", o.Duration.Milliseconds(), "err", o.Err)
			}
		}
	})
}

func failLevel(failed bool) slog.Level {
	if failed {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
