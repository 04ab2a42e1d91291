package schemas

import (
	"errors"
	"fmt"
	"time"
)

// Rollout is the rollout of a new version of one agent, as the rollouts
// bucket holds it (one key per agent) and every server of the mesh applies
// it to the task subject mesh.task.<agent> (docs/protocol.md, "Versions and
// rollouts"): Weight percent of new tasks go to version To, the rest to
// version From. Promoted is a rollout at 100 that stays. Shadow sends a
// copy of each task to To besides, whose result is recorded and delivered
// to no one.
type Rollout struct {
	Agent     string    `json:"agent"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Weight    int       `json:"weight"`
	Shadow    bool      `json:"shadow,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RolloutApplied is what a server writes under applied.<server> in the
// rollouts bucket once it has applied every rollout up to Revision.
type RolloutApplied struct {
	Server   string    `json:"server"`
	Revision uint64    `json:"revision"`
	At       time.Time `json:"at"`
	Error    string    `json:"error,omitempty"` // why the last rollout could not be applied
}

// Validate reports every problem of r at once. Names and versions are
// checked as subject tokens by the bus (bus.VersionToken), which schemas
// does not know.
func (r Rollout) Validate() error {
	var errs []error
	if r.Agent == "" {
		errs = append(errs, errors.New("rollout: agent is empty"))
	}
	if r.To == "" {
		errs = append(errs, errors.New("rollout: the new version (to) is empty"))
	}
	if r.From == "" {
		errs = append(errs, errors.New("rollout: the version that takes the rest (from) is empty"))
	}
	if r.From != "" && r.From == r.To {
		errs = append(errs, fmt.Errorf("rollout: from and to are both %q: roll out a version other than the one that runs", r.To))
	}
	if r.Weight < 0 || r.Weight > 100 {
		errs = append(errs, fmt.Errorf("rollout: weight %d: give a percentage from 0 to 100", r.Weight))
	}
	return errors.Join(errs...)
}
