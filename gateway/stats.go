package gateway

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// statsWindow is how many recent results per agent the statistics are
// computed over; on start the tracker reads this many of the newest
// results of the results stream in all.
const statsWindow = 200

// statsSetupTimeout bounds reading the results stream and creating the
// consumer that follows it.
const statsSetupTimeout = 10 * time.Second

// statsTracker keeps each agent's most recent results (success and
// duration) from an ordered consumer on the results stream: it starts
// statsWindow messages before the stream's end and then follows it live.
// It is a cache of what the stream holds, written only by its consumer.
type statsTracker struct {
	mu     sync.Mutex
	recent map[string][]sample // agent -> ring, newest last
	cc     jetstream.ConsumeContext
}

type sample struct {
	ok      bool
	ms      int64
	version string
	shadow  bool
}

// newStatsTracker starts following results through c; with no c (no
// identity that may read every result) it stays empty.
func newStatsTracker(c *conn, log *slog.Logger) *statsTracker {
	t := &statsTracker{recent: map[string][]sample{}}
	if c == nil {
		return t
	}
	// Setting the consumer up is bounded; the consumer then lives as long
	// as the gateway (Stop).
	ctx, cancel := context.WithTimeout(context.Background(), statsSetupTimeout)
	defer cancel()
	info, err := c.res.Results.Info(ctx)
	if err != nil {
		log.Warn("gateway: agent statistics are off: reading the results stream", "error", err)
		return t
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{c.names.Results()}, DeliverPolicy: jetstream.DeliverNewPolicy}
	if last := info.State.LastSeq; last > 0 {
		start := uint64(1)
		if last > statsWindow {
			start = last - statsWindow + 1
		}
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	}
	cons, err := c.res.Results.OrderedConsumer(ctx, cfg)
	if err != nil {
		log.Warn("gateway: agent statistics are off: following the results stream", "error", err)
		return t
	}
	t.cc, err = cons.Consume(func(m jetstream.Msg) {
		agent := c.names.ResultAgent(m.Subject())
		ev, err := bus.DecodeJS(m)
		if err != nil || agent == "" {
			return
		}
		var res schemas.AgentResult
		if ev.DataAs(&res) != nil {
			return
		}
		t.add(agent, sample{ok: res.Success, ms: res.Metrics.DurationMS, version: res.Version, shadow: res.Shadow})
	})
	if err != nil {
		log.Warn("gateway: agent statistics are off", "error", err)
	}
	return t
}

func (t *statsTracker) add(agent string, s sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := append(t.recent[agent], s)
	if len(r) > statsWindow {
		r = r[len(r)-statsWindow:]
	}
	t.recent[agent] = r
}

// fill sets the success rate and median duration of agent's recent
// results, and the same by version.
func (t *statsTracker) fill(agent string, st *AgentStats) {
	t.mu.Lock()
	r := slices.Clone(t.recent[agent])
	t.mu.Unlock()
	byVersion := make([]schemas.AgentResult, len(r))
	versioned := false
	for i, s := range r {
		byVersion[i] = schemas.AgentResult{Success: s.ok, Version: s.version, Shadow: s.shadow, Metrics: schemas.Metrics{DurationMS: s.ms}}
		versioned = versioned || s.version != ""
	}
	if versioned {
		st.Versions = schemas.VersionStatsOf(byVersion)
	}
	r = slices.DeleteFunc(r, func(s sample) bool { return s.shadow }) // answers to no one's task
	st.Recent = len(r)
	if len(r) == 0 {
		return
	}
	ok := 0
	ms := make([]int64, 0, len(r))
	for _, s := range r {
		if s.ok {
			ok++
		}
		ms = append(ms, s.ms)
	}
	slices.Sort(ms)
	rate := float64(ok) / float64(len(r))
	p50 := ms[(len(ms)-1)/2]
	st.SuccessRate, st.P50MS = &rate, &p50
}

func (t *statsTracker) stop() {
	if t.cc != nil {
		t.cc.Stop()
	}
}
