package pipeline

import (
	"context"
	"errors"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// upgrade turns the header of a running run written by the previous layout
// (see state.RunHeader.Legacy) into this one, so a run under way when the
// orchestrator was upgraded goes on:
//   - each step the header lists as skipped gets the record a skip has now;
//   - the counts, usage and failures of the waves over are tallied from
//     their records;
//   - the wave in progress counts the steps that have a record.
//
// The previous layout's run state (slots, history, applied task ids) is
// read as it is: the outputs already routed are marked applied there, so
// routing the wave in progress routes the others once. A run that ended is
// read as it is and never written again. Replicas of both layouts must not
// run side by side: upgrade them together.
func (s *Scheduler) upgrade(ctx context.Context, sd *state.RunSpec, h *state.RunHeader, rev uint64) (*state.RunHeader, uint64, error) {
	next, nrev, err := s.writeHeader(ctx, sd.ID, h, rev, func(next *state.RunHeader) error {
		if !next.Legacy() || next.Done() {
			return state.ErrUnchanged // another replica upgraded it, or it ended
		}
		for id, reason := range next.LegacySkipped {
			rec := &state.StepState{ID: id, Agent: stepAgent(sd, id), Wave: waveOf(sd, id), Status: schemas.StepSkipped,
				FinishedAt: next.UpdatedAt, Reason: reason}
			if _, err := s.store.RecordStep(ctx, sd.ID, rec); err != nil {
				return err
			}
		}
		wave := next.Wave
		next.LegacyWaveEnded, next.LegacyFailed, next.LegacySkipped = nil, nil, nil
		next.Completed, next.FailedSteps, next.SkippedSteps, next.Failures, next.Usage, next.Ends = 0, 0, 0, nil, schemas.Usage{}, 0
		for w := 0; w <= wave && w < len(sd.Waves); w++ {
			for _, id := range sd.Waves[w] {
				rec, err := s.store.StepRecord(ctx, sd.ID, id)
				switch {
				case err == nil && w < wave:
					tally(next, sd, rec)
				case err == nil:
					next.Ends++
				case w < wave || !errors.Is(err, state.ErrNotFound):
					return err
				}
			}
		}
		return nil
	})
	if errors.Is(err, state.ErrUnchanged) {
		return next, nrev, nil
	}
	if err != nil {
		return nil, 0, err
	}
	s.log.InfoContext(runContext(sd), "run header upgraded to the counted layout", "wave", next.Wave, "ends", next.Ends)
	return next, nrev, nil
}

func stepAgent(sd *state.RunSpec, id string) string {
	s, _ := sd.Step(id)
	return s.Agent
}
