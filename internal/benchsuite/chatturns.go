package benchsuite

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// chatWindows are the turns whose cost a conversation of turns turns
// reports: 1-10, 41-50 and 191-200, those it reaches.
func chatWindows(turns int) [][2]int {
	var out [][2]int
	for _, w := range [][2]int{{1, 10}, {41, 50}, {191, 200}} {
		if w[1] <= turns {
			out = append(out, w)
		}
	}
	return out
}

// chatPair is the chat scenario of turns turns: one operation is a
// conversation of turns turns, each "find sunsets", which the offline
// planner makes one call of the search agent; by hand, the same call to
// the same agent and one KV compare-and-set per turn.
func chatPair(ctx context.Context, env Env, h *hand, kv *kvCounter, turns int) Pair {
	task := handTask{agent: shapeSearch, req: schemas.TaskRequest{Params: map[string]any{"query": "sunsets"}}}
	tasks := slices.Repeat([]handTask{task}, turns)
	return Pair{
		ID:        fmt.Sprintf("chat-%d", turns),
		Name:      fmt.Sprintf("chat, %d turns of one conversation (offline planner, one agent call a turn; orchestrator and agent processes)", turns),
		Unit:      "conversation",
		Baseliner: "the same agent call a turn by hand, one KV compare-and-set per turn",
		Baseline: func(b *testing.B) {
			measureTurns(b, turns, kv, func(at func(int)) error {
				return h.runTimed(ctx, tasks, 1, func(i int, _ time.Duration) { at(i) })
			})
		},
		Mesh: func(b *testing.B) {
			measureTurns(b, turns, kv, func(at func(int)) error { return converse(ctx, env, turns, at) })
		},
	}
}

// converse has a conversation of turns turns with the orchestrator,
// calling at after each turn's answer.
func converse(ctx context.Context, env Env, turns int, at func(int)) error {
	conv := fmt.Sprintf("bench-chat-%d", time.Now().UnixNano())
	answers := make(chan *nats.Msg, turns)
	sub, err := env.NC.Subscribe(env.Names.Events(conv, "chat"), func(m *nats.Msg) {
		if m.Header.Get("ce-type") == bus.TypeChatResponded {
			answers <- m
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := env.NC.Flush(); err != nil {
		return err
	}
	for i := range turns {
		if _, _, err := client.SendChat(ctx, env.JS, env.Names, conv, chatMessage, "bench"); err != nil {
			return err
		}
		select {
		case m := <-answers:
			var resp schemas.ChatResponse
			ev, err := bus.Decode(m)
			if err == nil {
				err = ev.DataAs(&resp)
			}
			if err != nil {
				return fmt.Errorf("turn %d of conversation %s: %w", i+1, conv, err)
			}
			if resp.State != schemas.ChatCompleted {
				return fmt.Errorf("turn %d of conversation %s ended %s: %s", i+1, conv, resp.State, resp.Output)
			}
		case <-time.After(time.Minute):
			return fmt.Errorf("turn %d of conversation %s: no answer within a minute", i+1, conv)
		}
		at(i)
	}
	return nil
}

// measureTurns runs conversation (turns turns, calling at after each)
// once per iteration of b.Loop and reports, for each of chatWindows, the
// mean time of a turn and the KV writes, publishes and bytes per turn
// (see kvCounter), as ns/turn@<first>-<last>, kv-writes/turn@... and so
// on. KV is read only at the windows' edges, and the reading is left out
// of the turns' times.
func measureTurns(b *testing.B, turns int, kv *kvCounter, conversation func(at func(int)) error) {
	windows := chatWindows(turns)
	edge := map[int]bool{}
	for _, w := range windows {
		edge[w[0]-2], edge[w[1]-1] = true, true // the turns before and at the window's end
	}
	var (
		sums  = make([]time.Duration, len(windows))
		kvs   = make([]kvCount, len(windows))
		durs  []time.Duration
		convs int
	)
	kv.settle()
	for b.Loop() {
		ends := make([]time.Time, turns)    // when turn i was answered
		resumed := make([]time.Time, turns) // when turn i+1 could be sent
		counts := make([]kvCount, turns)
		from := kv.read()
		start := time.Now()
		err := conversation(func(i int) {
			ends[i] = time.Now()
			if edge[i] {
				counts[i] = kv.read()
			}
			resumed[i] = time.Now()
		})
		if err != nil {
			fail(b, err)
		}
		durs = append(durs, time.Since(start))
		for j, w := range windows {
			lo, hi := w[0]-1, w[1]-1 // turn indices
			begin, before := start, from
			if lo > 0 {
				begin, before = resumed[lo-1], counts[lo-1]
			}
			var paused time.Duration // KV readings inside the window
			for i := lo; i < hi; i++ {
				paused += resumed[i].Sub(ends[i])
			}
			sums[j] += ends[hi].Sub(begin) - paused
			kvs[j] = kvs[j].plus(counts[hi].minus(before))
		}
		convs++
		b.StopTimer()
		kv.settle() // the last turn's writes, outside the next conversation's count
		b.StartTimer()
	}
	recordLatency(b, durs)
	for j, w := range windows {
		n := float64(convs * (w[1] - w[0] + 1))
		at := fmt.Sprintf("@%d-%d", w[0], w[1])
		b.ReportMetric(float64(sums[j])/n, "ns/turn"+at)
		kvs[j].report(b, n, "turn"+at)
	}
}
