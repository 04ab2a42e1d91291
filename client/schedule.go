package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/pipelinespec"
)

// MaxScheduleName is the longest schedule name: the runs it starts are
// named <name>-<tick time>-<sequence>.
const MaxScheduleName = 64

// ScheduleInfo is one schedule on the mesh.
type ScheduleInfo struct {
	Name     string                `json:"name"`
	Pipeline string                `json:"pipeline"`
	Schedule pipelinespec.Schedule `json:"schedule"`
	// Pattern is the Nats-Schedule header the server fires it by.
	Pattern string    `json:"pattern"`
	Added   time.Time `json:"added"`
}

// ValidateScheduleName reports whether name can name a schedule: 1 to
// MaxScheduleName letters, digits, '-', '_' or '='.
func ValidateScheduleName(name string) error {
	if err := bus.ValidateToken("schedule name", name); err != nil {
		return err
	}
	if len(name) > MaxScheduleName {
		return fmt.Errorf("%w: schedule name %q is %d bytes long: use at most %d", bus.ErrInvalidName, name, len(name), MaxScheduleName)
	}
	return nil
}

// AddSchedule stores spec as schedule name: a message on
// mesh.schedule.<name> in MESH_SCHEDULES whose Nats-Schedule header is
// spec.Schedule, and whose body is the pipeline submission the server
// copies to mesh.scheduled.<name> each time the schedule fires, for the
// orchestrator to start as run <name>-<tick time>-<sequence>. The server
// keeps the schedule: it survives every orchestrator restarting, and each
// tick starts one run. A name already in use fails with ErrScheduleExists
// unless replace is set, which replaces it.
func AddSchedule(ctx context.Context, js jetstream.JetStream, names bus.Names, name string, spec pipelinespec.PipelineSpec, replace bool) error {
	if err := ValidateScheduleName(name); err != nil {
		return err
	}
	if spec.Schedule == nil {
		return fmt.Errorf("%w: pipeline %q has no schedule: add schedule: with one of cron, every or at, or give --cron, --every or --at", pipelinespec.ErrInvalidSchedule, spec.Name)
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	sch := *spec.Schedule
	if sch.At != "" {
		at, _ := time.Parse(time.RFC3339, sch.At)
		if !at.After(time.Now()) {
			return fmt.Errorf("%w: at %q is in the past: give a later time", pipelinespec.ErrInvalidSchedule, sch.At)
		}
	}
	ev, err := bus.NewEvent(bus.TypePipelineSubmitted, "agentmesh/schedule/"+name, spec)
	if err != nil {
		return err
	}
	msg, err := bus.Encode(names.Schedule(name), ev)
	if err != nil {
		return err
	}
	msg.Header.Set("Nats-Schedule", sch.Pattern())
	opts := []jetstream.PublishOpt{jetstream.WithScheduleTarget(names.ScheduleTick(name)), jetstream.WithScheduleTTL(bus.ScheduleTickTTL)}
	if sch.TimeZone != "" {
		opts = append(opts, jetstream.WithScheduleTimeZone(sch.TimeZone))
	}
	if replace {
		msg.Header.Set("Nats-Rollup", jetstream.MsgRollupSubject)
	} else {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(0))
	}
	if _, err := js.PublishMsg(ctx, msg, opts...); err != nil {
		var apiErr *jetstream.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence:
			return fmt.Errorf("%w: %q: remove it first (agentmesh schedule rm %s) or replace it (--replace)", ErrScheduleExists, name, name)
		case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
			return fmt.Errorf("adding schedule %q: no stream %s answered (is the mesh provisioned by an agentmesh of this version?): %w", name, names.SchedulesStream(), err)
		}
		return fmt.Errorf("adding schedule %q: %w", name, err)
	}
	return nil
}

// Schedules lists the schedules on the mesh, by name.
func Schedules(ctx context.Context, js jetstream.JetStream, names bus.Names) ([]ScheduleInfo, error) {
	st, err := schedulesStream(ctx, js, names)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(names.Schedules()))
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	var out []ScheduleInfo
	for subject := range info.State.Subjects {
		m, err := st.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("reading schedule %s: %w", subject, err)
		}
		out = append(out, scheduleInfo(names, m))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func scheduleInfo(names bus.Names, m *jetstream.RawStreamMsg) ScheduleInfo {
	si := ScheduleInfo{Name: m.Subject[len(names.Schedule("")):], Pattern: m.Header.Get("Nats-Schedule"), Added: m.Time}
	if ev, err := bus.Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}); err == nil {
		var spec pipelinespec.PipelineSpec
		if bus.DecodeData(ev, &spec, nil) == nil {
			si.Pipeline = spec.Name
			if spec.Schedule != nil {
				si.Schedule = *spec.Schedule
			}
		}
	}
	return si
}

// RemoveSchedule removes schedule name: it fires no more. Ticks it fired
// already are still run. A name that is no schedule fails with
// ErrUnknownSchedule.
func RemoveSchedule(ctx context.Context, js jetstream.JetStream, names bus.Names, name string) error {
	if err := ValidateScheduleName(name); err != nil {
		return err
	}
	st, err := schedulesStream(ctx, js, names)
	if err != nil {
		return err
	}
	if _, err := st.GetLastMsgForSubject(ctx, names.Schedule(name)); errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("%w: %q: agentmesh schedule ls lists them", ErrUnknownSchedule, name)
	} else if err != nil {
		return fmt.Errorf("removing schedule %q: %w", name, err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(names.Schedule(name))); err != nil {
		return fmt.Errorf("removing schedule %q: %w", name, err)
	}
	return nil
}

func schedulesStream(ctx context.Context, js jetstream.JetStream, names bus.Names) (jetstream.Stream, error) {
	st, err := js.Stream(ctx, names.SchedulesStream())
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w (a mesh provisioned by an older agentmesh has none: run any agentmesh command of this version once with admin credentials)", names.SchedulesStream(), err)
	}
	return st, nil
}
