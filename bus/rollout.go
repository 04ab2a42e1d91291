package bus

import (
	"fmt"

	"github.com/agentmesh/agentmesh/schemas"
)

// RolloutTarget is one destination of a rollout's weighted subject
// mapping: Percent of the messages published on the mapped subject go to
// Subject.
type RolloutTarget struct {
	Subject string
	Percent int
}

// RolloutMapping returns the subject rollout r maps, mesh.task.<agent>,
// and where its messages go: mesh.task.<agent>.v.<to> for r.Weight
// percent and mesh.task.<agent>.v.<from> for the rest (one destination at
// weight 0 or 100). Every new task of the agent then lands on one of its
// version subjects; a task pinned to a version is published there
// directly and no mapping touches it.
func (n Names) RolloutMapping(r schemas.Rollout) (string, []RolloutTarget, error) {
	if err := r.Validate(); err != nil {
		return "", nil, err
	}
	src, err := n.Task(r.Agent)
	if err != nil {
		return "", nil, err
	}
	from, err := n.TaskVersion(r.Agent, r.From)
	if err != nil {
		return "", nil, fmt.Errorf("rollout of %s from: %w", r.Agent, err)
	}
	to, err := n.TaskVersion(r.Agent, r.To)
	if err != nil {
		return "", nil, fmt.Errorf("rollout of %s to: %w", r.Agent, err)
	}
	switch r.Weight {
	case 0:
		return src, []RolloutTarget{{from, 100}}, nil
	case 100:
		return src, []RolloutTarget{{to, 100}}, nil
	}
	return src, []RolloutTarget{{to, r.Weight}, {from, 100 - r.Weight}}, nil
}

// RolloutAppliedKey is the key under which server name acknowledges, in
// the rollouts bucket, the revision it applied.
func RolloutAppliedKey(server string) string { return "applied." + server }

// HeaderShadow marks the shadow copy of a task (a rollout in shadow
// mode): the instance answers it on ShadowResult, never on its replyto,
// and emits no progress into the task's run or conversation.
const HeaderShadow = "Agentmesh-Shadow"

// ServerKey is server name as a KV key token: each byte other than an
// ASCII letter, digit, '-' or '_' becomes '_'.
func ServerKey(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !isWordByte(c) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}
