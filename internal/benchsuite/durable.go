package benchsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
)

// TextTaskData is a structured task for TextAgent: one TEXT input, an op.
var TextTaskData = []byte(`{"inputs":{"text":{"data_type":"TEXT","value":"hello durable hop","source":"bench"}},"params":{"op":"upper"},"timeout_ms":30000}`)

// rawReplyHeader names the subject the baseline worker answers on.
const rawReplyHeader = "Bench-Reply"

// rawWorker is the hop written by hand with JetStream: a work-queue stream
// of tasks, a pull consumer whose handler answers each task on a subject of
// a second stream and acks it. It is what a user would write instead of an
// agent, and the baseline of the durable-hop and throughput scenarios.
type rawWorker struct {
	js   jetstream.JetStream
	ccs  []jetstream.ConsumeContext
	work func(task []byte) ([]byte, error)

	streams     []string
	workSubj    string
	replyPrefix string // the reply subjects, under the reply stream
}

// startRawWorker creates the baseline's two streams, BENCH_<NAME>_WORK and
// BENCH_<NAME>_REPLY (on the storage of the mesh's task stream, so both
// sides pay the same disk), and instances pull workers sharing one durable
// consumer, each running work on a task.
func startRawWorker(ctx context.Context, env Env, name string, instances int, work func([]byte) ([]byte, error)) (*rawWorker, error) {
	storage := jetstream.FileStorage
	if s, err := env.JS.Stream(ctx, env.Names.TasksStream()); err == nil {
		storage = s.CachedInfo().Config.Storage
	}
	w := rawWorkerView(env, name)
	w.work = work
	upper := "BENCH_" + strings.ToUpper(name)
	w.streams = []string{upper + "_WORK", upper + "_REPLY"}
	for _, cfg := range []jetstream.StreamConfig{
		{Name: w.streams[0], Subjects: []string{w.workSubj}, Retention: jetstream.WorkQueuePolicy, Storage: storage},
		{Name: w.streams[1], Subjects: []string{w.replyPrefix + ">"}, MaxAge: time.Minute, Storage: storage},
	} {
		if _, err := env.JS.CreateOrUpdateStream(ctx, cfg); err != nil {
			return nil, errors.Join(fmt.Errorf("baseline stream %s: %w", cfg.Name, err), w.Close())
		}
	}
	cons, err := env.JS.CreateOrUpdateConsumer(ctx, w.streams[0], jetstream.ConsumerConfig{
		Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	for range instances {
		cc, err := cons.Consume(w.handle)
		if err != nil {
			return nil, errors.Join(err, w.Close())
		}
		w.ccs = append(w.ccs, cc)
	}
	return w, nil
}

// rawWorkerView is the sending side of the baseline worker called name,
// whose streams and workers another process runs (RoleHopBaseline): it
// sends tasks and awaits replies; Close does nothing.
func rawWorkerView(env Env, name string) *rawWorker {
	return &rawWorker{js: env.JS, workSubj: "bench." + name + ".work", replyPrefix: "bench." + name + ".reply."}
}

// handle answers one task on the subject its header names, then acks it.
func (w *rawWorker) handle(m jetstream.Msg) {
	out, err := w.work(m.Data())
	if err != nil {
		out = []byte(`{"success":false}`)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.js.PublishMsg(ctx, &nats.Msg{Subject: m.Headers().Get(rawReplyHeader), Data: out}); err != nil {
		_ = m.Nak()
		return
	}
	_ = m.Ack()
}

// Close stops the workers and deletes the baseline's streams.
func (w *rawWorker) Close() error {
	for _, cc := range w.ccs {
		cc.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, s := range w.streams {
		if err := w.js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// task is the message of one task answered on reply.
func (w *rawWorker) task(reply string, data []byte) *nats.Msg {
	return &nats.Msg{Subject: w.workSubj, Header: nats.Header{rawReplyHeader: []string{reply}}, Data: data}
}

// hop sends one task through the hand-written hop the way RoundTripData
// sends one through the mesh: subscribe to the reply subject, publish the
// task to the stream, wait for the reply.
func (w *rawWorker) hop(ctx context.Context, env Env, id string, task []byte) (time.Duration, []byte, error) {
	js, err := callerJS(env)
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	reply := w.replyPrefix + id
	sub, err := env.NC.SubscribeSync(reply)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if _, err := js.PublishMsg(ctx, w.task(reply, task)); err != nil {
		return 0, nil, err
	}
	res, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		return 0, nil, err
	}
	return time.Since(start), res.Data, nil
}

// upperText is the baseline's TextAgent: it reads the task's text input
// and answers with it in upper case, as TextAgent's op "upper" does.
func upperText(task []byte) ([]byte, error) {
	var t struct {
		Inputs map[string]struct {
			DataType string `json:"data_type"`
			Value    string `json:"value"`
		} `json:"inputs"`
		Params map[string]string `json:"params"`
	}
	if err := json.Unmarshal(task, &t); err != nil {
		return nil, err
	}
	in, ok := t.Inputs["text"]
	if !ok || in.DataType != "TEXT" {
		return nil, errors.New("no TEXT input named text")
	}
	return json.Marshal(map[string]any{"success": true, "outputs": map[string]any{
		"text": map[string]string{"data_type": "TEXT", "value": strings.ToUpper(in.Value)}}})
}

// DurableHop compares one structured task through TextAgent (published to
// MESH_TASKS, its result awaited on mesh.result.TextAgent.<id>) with the
// same hop written by hand with JetStream (publish to a work-queue stream; a
// pull worker publishes the reply to a second stream). Both report p50-ns
// and p99-ns. The returned closer stops the agent and the worker.
func DurableHop(ctx context.Context, env Env) (Pair, io.Closer, error) {
	return AgentHop(ctx, env, durableHop())
}

// Hop is a durable-hop scenario: a task for an agent, and what the
// hand-written worker of the baseline does with the same task.
type Hop struct {
	ID, Name string
	Agent    agents.Agent
	Task     []byte                            // the task.requested payload
	Work     func(task []byte) ([]byte, error) // the baseline worker's work
	Want     string                            // what the baseline's reply contains
}

// AgentHop compares h.Task through h.Agent (served by the runtime in this
// process) with the same hop written by hand with JetStream, the worker
// doing h.Work (in this process too). The returned closer stops the agent
// and the worker.
func AgentHop(ctx context.Context, env Env, h Hop) (Pair, io.Closer, error) {
	agent, err := Serve(ctx, env, h.Agent)
	if err != nil {
		return Pair{}, nil, err
	}
	w, err := startRawWorker(ctx, env, hopWorkerName(h.ID), 1, h.Work)
	if err != nil {
		return Pair{}, nil, errors.Join(err, agent.Close())
	}
	closer := closerFunc(func() error { return errors.Join(w.Close(), agent.Close()) })
	return hopPair(ctx, env, h, w), closer, nil
}

// hopWorkerName names the baseline worker of hop scenario id.
func hopWorkerName(id string) string { return strings.ReplaceAll(id, "-", "") }

// hopPair is the comparison of h, the agent served and the worker w
// running wherever they run.
func hopPair(ctx context.Context, env Env, h Hop, w *rawWorker) Pair {
	name := h.Agent.Contract().Name
	return Pair{
		ID: h.ID, Name: h.Name, Unit: "task", Baseliner: "nats.go JetStream work queue + pull worker + reply stream",
		Baseline: func(b *testing.B) {
			measure(b, func() (time.Duration, error) {
				d, out, err := w.hop(ctx, env, nuid.Next(), h.Task)
				if err == nil && !strings.Contains(string(out), h.Want) {
					err = fmt.Errorf("baseline hop answered %s, want %q in it", out, h.Want)
				}
				return d, err
			})
		},
		Mesh: func(b *testing.B) {
			measure(b, func() (time.Duration, error) {
				d, res, err := RoundTripData(ctx, env, name, h.Task)
				if err == nil && res.Header.Get("ce-type") != bus.TypeTaskCompleted {
					err = fmt.Errorf("%s answered %s: %s", name, res.Header.Get("ce-type"), res.Data)
				}
				return d, err
			})
		},
	}
}

// durableHop is the durable-hop scenario.
func durableHop() Hop {
	return Hop{ID: "durable-hop", Name: "durable hop (TextAgent)", Agent: text.New(), Task: TextTaskData,
		Work: upperText, Want: "HELLO DURABLE HOP"}
}
