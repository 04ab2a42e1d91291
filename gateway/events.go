package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
)

// handleEvents streams mesh-wide changes for the list pages: every run's
// step and end events, every conversation's answers (core subscriptions on
// mesh.events.*.pipeline and mesh.events.*.chat, owned or not, or for a
// client its own, mesh.events.*.pipeline.<client>..., from now on), and a
// TypeRegistryChanged event whenever the live agents change (the first one
// at once, with the current agents).
func (g *Gateway) handleEvents(w http.ResponseWriter, r *http.Request, c *conn) error {
	ctx := r.Context()
	ch := make(chan *nats.Msg, 256)
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	for _, kind := range []string{"pipeline", "chat"} {
		for _, subject := range c.names.EventsKind("*", kind) {
			s, err := c.nc.ChanSubscribe(subject, ch)
			if err != nil {
				return meshError("following the mesh's events", err)
			}
			subs = append(subs, s)
		}
	}
	if err := c.nc.FlushTimeout(5 * time.Second); err != nil {
		return meshError("following the mesh's events", err)
	}
	s, err := startSSE(w)
	if err != nil {
		return nil
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	changed := c.reg.Changes()
	var seen recentIDs
	if sendRegistry(s, c) != nil {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if s.ping() != nil {
				return nil
			}
		case <-changed:
			changed = c.reg.Changes()
			if sendRegistry(s, c) != nil {
				return nil
			}
		case m := <-ch:
			ev, err := bus.Decode(m)
			if err != nil || !meshWideType(ev.Type) || seen.again(m.Header.Get(jetstream.MsgIDHeader)) {
				continue
			}
			if s.sendEvent(ev) != nil {
				return nil
			}
		}
	}
}

// sendRegistry writes the live agents as a TypeRegistryChanged event.
func sendRegistry(s *sseWriter, c *conn) error {
	snap := registrySnapshot{Agents: []registryAgent{}}
	for _, a := range c.reg.Agents() {
		snap.Agents = append(snap.Agents, registryAgent{Name: a.Contract.Name, Instances: len(a.Instances)})
	}
	data, err := json.Marshal(map[string]any{
		"specversion": "1.0", "id": "registry-" + time.Now().UTC().Format(time.RFC3339Nano),
		"source": "agentmesh/gateway", "type": TypeRegistryChanged, "time": time.Now().UTC().Format(time.RFC3339Nano),
		"datacontenttype": bus.ContentTypeJSON, "data": snap,
	})
	if err != nil {
		return err
	}
	return s.send("", TypeRegistryChanged, data)
}

// recentIDs remembers the last message ids a live stream passed on. A
// transition may be published twice (a replica that ends a wave sends
// again the ends another replica settled, so that they precede the next
// wave's events): the events stream keeps one, and a live subscriber,
// which sees both, passes on the first.
type recentIDs struct {
	ring [512]string
	next int
	set  map[string]bool
}

// again reports whether id was seen among the last ones, and remembers it.
func (r *recentIDs) again(id string) bool {
	if id == "" {
		return false
	}
	if r.set == nil {
		r.set = make(map[string]bool, len(r.ring))
	}
	if r.set[id] {
		return true
	}
	delete(r.set, r.ring[r.next])
	r.ring[r.next] = id
	r.next = (r.next + 1) % len(r.ring)
	r.set[id] = true
	return false
}
