package schemas

import "time"

// InstanceInfo identifies one running copy of an agent.
type InstanceInfo struct {
	ID          string    `json:"id"`
	Host        string    `json:"host,omitempty"`
	PID         int       `json:"pid,omitempty"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	Version     string    `json:"version,omitempty"`
	Concurrency int       `json:"concurrency,omitempty"`
}

// Announcement is the data of io.agentmesh.agent.announced and the value of
// the instance's key in the agents bucket.
type Announcement struct {
	Contract AgentContract `json:"contract"`
	Instance InstanceInfo  `json:"instance"`
}

// Departure is the data of io.agentmesh.agent.departed.
type Departure struct {
	Agent    string `json:"agent"`
	Instance string `json:"instance"`
}

// AgentRefusal is the data of io.agentmesh.agent.refused: an announcement
// the registry left out, under which key and why, with the error code
// (CodeInvalidContract).
type AgentRefusal struct {
	Agent    string `json:"agent"`
	Key      string `json:"key"`
	Revision uint64 `json:"revision,omitempty"`
	Code     string `json:"code"`
	Error    string `json:"error"`
}
