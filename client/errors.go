package client

import (
	"errors"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/internal/pipespec"
)

var (
	// ErrInvalidPipeline reports a pipeline spec that does not decode or
	// fails its structural checks. It matches schemas.ErrInvalidPipeline.
	ErrInvalidPipeline = pipespec.ErrInvalidPipeline
	// ErrEmptyMessage reports a chat request without a message.
	ErrEmptyMessage = errors.New("chat: the message is empty; say what the mesh should do")
	// ErrUndecodableResult reports a result of an awaited task that could
	// not be decoded (see UndecodableResultError).
	ErrUndecodableResult = meshcore.ErrUndecodableResult
	// ErrUnknownConversation reports a conversation id that names no
	// conversation on the mesh.
	ErrUnknownConversation = errors.New("chat: no such conversation")
	// ErrInvalidAnnouncement reports an announcement the registry left
	// out (see Refusal).
	ErrInvalidAnnouncement = meshcore.ErrInvalidAnnouncement
	// ErrBacklogFull reports a task, chat request, submission or answer
	// that was not sent: the stream it goes to (MESH_TASKS,
	// MESH_REQUESTS) or the account is at a limit. The error is a
	// *bus.BacklogError naming the stream and the limit; it carries the
	// code backlog_full. Send again later.
	ErrBacklogFull = bus.ErrBacklogFull
	// ErrRunExists reports a submission naming a run id that another
	// submission took first (the stream's deduplication on the run id
	// decides, across every client and gateway): the mesh dropped this
	// one. The error also wraps bus.ErrDuplicate.
	ErrRunExists = errors.New("client: run id taken")
	// ErrScheduleExists reports a schedule name in use (AddSchedule).
	ErrScheduleExists = errors.New("client: schedule exists")
	// ErrUnknownSchedule reports a name that is no schedule.
	ErrUnknownSchedule = errors.New("client: no such schedule")
)
