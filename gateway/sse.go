package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// keepAlive is how often an idle event stream gets a comment line, so
// proxies and browsers do not time it out.
const keepAlive = 15 * time.Second

// sseWriter writes server-sent events (text/event-stream): each mesh event
// as "id:" its CloudEvent id, "event:" its type and "data:" the event in
// the CloudEvents JSON format.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE answers the request as an event stream.
func startSSE(w http.ResponseWriter) (*sseWriter, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	if _, err := fmt.Fprint(w, ": agentmesh event stream\n\n"); err != nil {
		return nil, err
	}
	return s, s.rc.Flush()
}

// send writes one event with its id and type.
func (s *sseWriter) send(id, typ string, data []byte) error {
	var b strings.Builder
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", oneLineField(id))
	}
	fmt.Fprintf(&b, "event: %s\n", oneLineField(typ))
	for _, line := range strings.Split(string(data), "\n") {
		fmt.Fprintf(&b, "data: %s\n", line)
	}
	b.WriteString("\n")
	if _, err := fmt.Fprint(s.w, b.String()); err != nil {
		return err
	}
	return s.rc.Flush()
}

// sendEvent writes a mesh event.
func (s *sseWriter) sendEvent(ev bus.Event) error {
	data, err := json.Marshal(structured(ev))
	if err != nil {
		return err
	}
	return s.send(ev.ID, ev.Type, data)
}

// ping writes a comment line.
func (s *sseWriter) ping() error {
	if _, err := fmt.Fprint(s.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}

func oneLineField(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// structured is ev in the CloudEvents JSON event format: the context
// attributes, extensions as top-level members and the data inline.
func structured(ev bus.Event) map[string]any {
	out := map[string]any{"specversion": "1.0", "id": ev.ID, "source": ev.Source, "type": ev.Type}
	if !ev.Time.IsZero() {
		out["time"] = ev.Time.UTC().Format(time.RFC3339Nano)
	}
	if ev.Subject != "" {
		out["subject"] = ev.Subject
	}
	if ev.DataSchema != "" {
		out["dataschema"] = ev.DataSchema
	}
	for k, v := range ev.Extensions {
		out[k] = v
	}
	if len(ev.Data) > 0 {
		ct := ev.DataContentType
		if ct == "" {
			ct = bus.ContentTypeJSON
		}
		out["datacontenttype"] = ct
		if json.Valid(ev.Data) {
			out["data"] = json.RawMessage(ev.Data)
		} else {
			out["data_base64"] = ev.Data
		}
	}
	return out
}

// streamEvents writes the events of ch to the response until the request
// ends. After a reconnection (the Last-Event-ID header), the events up to
// and including that id are skipped: the stream replays from the start.
func streamEvents(ctx context.Context, w http.ResponseWriter, r *http.Request, ch <-chan bus.Event, keep func(bus.Event) bool) error {
	return streamWithDeltas(ctx, w, r, ch, keep, nil)
}

// TypeDelta is the event type of a piece of text a model is writing, in
// a conversation's or run's event stream: its data is a schemas.ChatDelta
// (not a CloudEvent), and it has no id, as pieces are not stored and a
// reconnection does not replay them.
const TypeDelta = "io.agentmesh.delta"

// maxPendingDeltas bounds the pieces waiting for a slow reader; more are
// dropped, as a lost piece would be.
const maxPendingDeltas = 256

// followDeltas subscribes to the text pieces of the conversation, run or
// task id (mesh.delta.<id>, owned or not; a client's own) until stop is called. It is a channel
// subscription: the connection's reader puts each piece in the channel as
// it reads it, so a piece sent before an event is in the channel when the
// event (read later on the same connection) reaches the stream. A reader
// too slow to keep up loses pieces, not events.
func followDeltas(c *conn, id string) (<-chan *nats.Msg, func(), error) {
	if err := bus.ValidateToken("id", id); err != nil {
		return nil, nil, err
	}
	ch := make(chan *nats.Msg, maxPendingDeltas)
	var subs []*nats.Subscription
	stop := func() {
		for _, sub := range subs {
			_ = sub.Unsubscribe()
		}
	}
	for _, subject := range c.names.DeltasOf(id) {
		sub, err := c.nc.ChanSubscribe(subject, ch)
		if err != nil {
			stop()
			return nil, nil, err
		}
		subs = append(subs, sub)
	}
	if err := c.nc.Flush(); err != nil { // the server has the subscription before the stream starts
		stop()
		return nil, nil, err
	}
	return ch, stop, nil
}

// streamWithDeltas is streamEvents with the pieces of text of deltas
// written between the events as they come (TypeDelta).
func streamWithDeltas(ctx context.Context, w http.ResponseWriter, r *http.Request, ch <-chan bus.Event, keep func(bus.Event) bool, deltas <-chan *nats.Msg) error {
	s, err := startSSE(w)
	if err != nil {
		return nil
	}
	skipTo := r.Header.Get("Last-Event-ID")
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if s.ping() != nil {
				return nil
			}
		case m := <-deltas:
			if sendDelta(s, m) != nil {
				return nil
			}
		case ev := <-ch:
			for pending := true; pending; { // the pieces sent before the event go first
				select {
				case m := <-deltas:
					if sendDelta(s, m) != nil {
						return nil
					}
				default:
					pending = false
				}
			}
			if skipTo != "" {
				if ev.ID == skipTo {
					skipTo = ""
				}
				continue
			}
			if keep != nil && !keep(ev) {
				continue
			}
			if s.sendEvent(ev) != nil {
				return nil
			}
		}
	}
}

// sendDelta writes one piece of text; one that is not a ChatDelta is
// dropped, as a lost piece would be.
func sendDelta(s *sseWriter, m *nats.Msg) error {
	var d schemas.ChatDelta
	if json.Unmarshal(m.Data, &d) != nil {
		return nil
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil
	}
	return s.send("", TypeDelta, data)
}

// eventTypes of the mesh-wide stream (GET /api/events): runs and
// conversations changing; registry changes are TypeRegistryChanged.
func meshWideType(typ string) bool {
	return typ == bus.TypePipelineCompleted || strings.HasPrefix(typ, bus.TypePipelineStepPrefix) ||
		typ == bus.TypeChatResponded || typ == bus.TypeResolveRefused
}

// TypeRegistryChanged is the event type of GET /api/events for a change
// of the live agents (an instance joined or left, or a contract changed);
// its data lists the live agents with their instance counts.
const TypeRegistryChanged = "io.agentmesh.gateway.registry.changed"

// registrySnapshot is the data of TypeRegistryChanged.
type registrySnapshot struct {
	Agents []registryAgent `json:"agents"`
}

type registryAgent struct {
	Name      string `json:"name"`
	Instances int    `json:"instances"`
}
