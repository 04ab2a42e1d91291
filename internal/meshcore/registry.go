package meshcore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// AgentInfo is one live agent: the contract its instances announce (the
// most recent announcement's, should they differ) and its live instances,
// sorted by id.
type AgentInfo struct {
	Contract  schemas.AgentContract  `json:"contract"`
	Instances []schemas.InstanceInfo `json:"instances"`
}

// Registry is the live view of the agents bucket (mesh_agents): every key
// <agent>.<instance> holds an instance's announcement and lives as long as
// the instance heartbeats. A put adds or refreshes an instance; a delete
// (its departure) removes it. A purge or a TTL expiry marker removes it
// unless it heartbeats again within two of its heartbeats (expiryGrace):
// the key of a live instance expires too when the bucket could not store
// its heartbeats for a TTL (the bucket's leader on a node cut off, the
// others electing a new one), and the instance puts it again at its next
// heartbeat once the bucket is back. It is safe for concurrent use.
type Registry struct {
	kv        jetstream.KeyValue
	wmu       sync.Mutex
	w         jetstream.KeyWatcher // the watch of the moment (see rewatch)
	stopped   chan struct{}        // closed by Stop
	onRefused func(Refusal)
	refused   map[string]string // key -> the value refused last, so a heartbeat is refused once

	mu      sync.RWMutex
	agents  map[string]map[string]registryEntry // agent -> instance id -> entry
	changed chan struct{}

	done     chan struct{}
	stopOnce sync.Once
}

type registryEntry struct {
	ann      schemas.Announcement
	revision uint64
	raw      []byte        // the value it was read from: a heartbeat repeating it is not checked again
	seen     time.Time     // when the server stored the value: the instance's last heartbeat
	interval time.Duration // between its last two heartbeats (0: one seen)
	expired  bool          // its key expired: gone unless it heartbeats within expiryGrace
}

// expiryGrace is how long an instance whose key expired (or was purged)
// stays live waiting for its next heartbeat: two heartbeats as the registry
// saw them, or, when it saw one, two thirds of the key's life (three
// heartbeats), at most maxExpiryGrace.
func expiryGrace(e registryEntry, expiredAt time.Time) time.Duration {
	d := 2 * e.interval
	if d <= 0 {
		d = 2 * expiredAt.Sub(e.seen) / 3
	}
	return min(max(d, 0), maxExpiryGrace)
}

// maxExpiryGrace bounds expiryGrace.
const maxExpiryGrace = time.Minute

// Refusal is an announcement the registry left out: the key it was put
// under, its revision, and why (an error wrapping ErrInvalidAnnouncement).
type Refusal struct {
	Key      string
	Agent    string // the key's agent name
	Revision uint64
	Err      error
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// OnRefused calls fn, on the registry's watch goroutine, for each
// announcement it leaves out (once per key and value: a heartbeat of the
// same bad announcement is not reported again). fn must not block.
func OnRefused(fn func(Refusal)) RegistryOption { return func(r *Registry) { r.onRefused = fn } }

// NewRegistry watches kv, the agents bucket, and returns once the registry
// holds the bucket's current keys (or ctx ends first). An announcement that
// does not decode, whose contract fails validation, or whose contract names
// another agent than its key is left out (see OnRefused). Call Stop to end
// the watch.
func NewRegistry(ctx context.Context, kv jetstream.KeyValue, opts ...RegistryOption) (*Registry, error) {
	if kv == nil {
		return nil, fmt.Errorf("client: NewRegistry: nil agents bucket")
	}
	// The watch lives as long as the registry (Stop), not as ctx, which
	// bounds only getting it started.
	w, err := bus.Retry(ctx, bus.TransientWait, nil, func() (jetstream.KeyWatcher, error) { return kv.WatchAll(context.Background()) })
	if err != nil {
		return nil, fmt.Errorf("client: watching agents bucket %s: %w", kv.Bucket(), err)
	}
	r := &Registry{
		kv:      kv,
		w:       w,
		stopped: make(chan struct{}),
		agents:  map[string]map[string]registryEntry{},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
		refused: map[string]string{},
	}
	for _, o := range opts {
		o(r)
	}
	initial := make(chan struct{})
	go r.watch(initial)
	select {
	case <-initial:
		return r, nil
	case <-ctx.Done():
		r.Stop()
		return nil, fmt.Errorf("client: reading agents bucket %s: %w", kv.Bucket(), context.Cause(ctx))
	}
}

// watch folds the watch's updates into the view until Stop. A watch that
// ends while the registry runs (its consumer could not be made again after
// the cluster moved: a leader election, a node cut off) is made again, and
// its listing of every key replaces the view: left alone, the view would
// stay as it was for good, and an instance that expired meanwhile would
// never come back.
func (r *Registry) watch(initial chan struct{}) {
	defer close(r.done)
	first := true
	for w := r.w; w != nil; w = r.rewatch() {
		listed := map[string]bool{} // keys of a new watch's listing, until its end
		for e := range w.Updates() {
			if e == nil {
				if first {
					first = false
					close(initial)
				} else if listed != nil {
					r.keepOnly(listed)
				}
				listed = nil
				continue
			}
			if listed != nil {
				listed[e.Key()] = true
			}
			r.apply(e)
		}
		if first {
			first = false
			close(initial)
		}
	}
}

// rewatchPause is how long rewatch waits between tries.
const rewatchPause = time.Second

// rewatch makes the watch again, trying until it can or Stop is called
// (then nil).
func (r *Registry) rewatch() jetstream.KeyWatcher {
	for {
		select {
		case <-r.stopped:
			return nil
		default:
		}
		if w, err := r.kv.WatchAll(context.Background()); err == nil {
			r.wmu.Lock()
			defer r.wmu.Unlock()
			select {
			case <-r.stopped:
				_ = w.Stop()
				return nil
			default:
			}
			r.w = w
			return w
		}
		select {
		case <-r.stopped:
			return nil
		case <-time.After(rewatchPause):
		}
	}
}

// keepOnly drops the instances whose keys a new watch did not list: they
// went while no watch ran.
func (r *Registry) keepOnly(listed map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for agent, instances := range r.agents {
		for instance := range instances {
			if !listed[agent+"."+instance] {
				delete(instances, instance)
				changed = true
			}
		}
		if len(instances) == 0 {
			delete(r.agents, agent)
		}
	}
	if changed {
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

// apply folds one KV entry into the view and signals a change.
func (r *Registry) apply(e jetstream.KeyValueEntry) {
	agent, instance, ok := strings.Cut(e.Key(), ".")
	if !ok || agent == "" || instance == "" {
		if e.Operation() == jetstream.KeyValuePut {
			r.refuse(e, agent, fmt.Errorf("%w: key %q has no instance part: an agent announces under <agent>.<instance>, such as %s.i1",
				ErrInvalidAnnouncement, e.Key(), agent))
		}
		return
	}
	var ann schemas.Announcement
	live := e.Operation() == jetstream.KeyValuePut
	if e.Operation() == jetstream.KeyValuePurge && r.suspect(agent, instance, e.Created()) {
		return
	}
	if live {
		r.mu.RLock()
		old, had := r.agents[agent][instance]
		r.mu.RUnlock()
		var err error
		if had && bytes.Equal(old.raw, e.Value()) {
			ann = old.ann // a heartbeat of the announcement checked before
		} else if ann, err = readAnnouncement(agent, instance, e.Value()); err != nil {
			r.refuse(e, agent, err)
			live = false
		} else {
			delete(r.refused, e.Key())
		}
	}
	r.mu.Lock()
	if live {
		if r.agents[agent] == nil {
			r.agents[agent] = map[string]registryEntry{}
		}
		old, had := r.agents[agent][instance]
		var interval time.Duration
		if had {
			interval = e.Created().Sub(old.seen)
		}
		r.agents[agent][instance] = registryEntry{ann: ann, revision: e.Revision(), raw: e.Value(), seen: e.Created(), interval: interval}
		if had && sameAnnouncement(old.ann, ann) {
			r.mu.Unlock()
			return // a heartbeat: nothing a reader can see changed
		}
	} else {
		if _, had := r.agents[agent][instance]; !had {
			r.mu.Unlock()
			return
		}
		delete(r.agents[agent], instance)
		if len(r.agents[agent]) == 0 {
			delete(r.agents, agent)
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// suspect notes that the key of a live instance expired (or was purged)
// at the server's time at: it stays live for expiryGrace, and leaves then
// unless a heartbeat came meanwhile. It reports false for an instance not
// live (nothing to do).
func (r *Registry) suspect(agent, instance string, at time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.agents[agent][instance]
	if !ok || e.expired {
		return ok
	}
	e.expired = true
	r.agents[agent][instance] = e
	grace := expiryGrace(e, at)
	// The server's clock said when; the wait is on this one: a marker
	// read late (a watch catching up) waits for less.
	wait := max(0, grace-time.Since(at))
	time.AfterFunc(wait, func() { r.leave(agent, instance, e.revision) })
	return true
}

// leave removes an instance whose key expired, unless it heartbeated since
// (a newer revision).
func (r *Registry) leave(agent, instance string, revision uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.agents[agent][instance]; !ok || e.revision != revision {
		return
	}
	delete(r.agents[agent], instance)
	if len(r.agents[agent]) == 0 {
		delete(r.agents, agent)
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// readAnnouncement decodes and checks the announcement stored under
// <agent>.<instance>; the key names the agent and instance when the value
// leaves them out.
func readAnnouncement(agent, instance string, value []byte) (schemas.Announcement, error) {
	var ann schemas.Announcement
	if err := json.Unmarshal(value, &ann); err != nil {
		return ann, fmt.Errorf("%w: the value is not an announcement (announcement.schema.json): %v", ErrInvalidAnnouncement, err)
	}
	if ann.Contract.Name == "" {
		ann.Contract.Name = agent
	}
	if ann.Instance.ID == "" {
		ann.Instance.ID = instance
	}
	if ann.Contract.Name != agent {
		return ann, fmt.Errorf("%w: the contract names agent %q but the key is under %q; an agent announces under its own name",
			ErrInvalidAnnouncement, ann.Contract.Name, agent)
	}
	if err := ann.Contract.Validate(); err != nil {
		return ann, fmt.Errorf("%w: %w", ErrInvalidAnnouncement, err)
	}
	return ann, nil
}

// refuse reports e's announcement, left out for err, once per value.
func (r *Registry) refuse(e jetstream.KeyValueEntry, agent string, err error) {
	if last, ok := r.refused[e.Key()]; ok && last == string(e.Value()) {
		return
	}
	r.refused[e.Key()] = string(e.Value())
	if r.onRefused != nil {
		r.onRefused(Refusal{Key: e.Key(), Agent: agent, Revision: e.Revision(), Err: err})
	}
}

func sameAnnouncement(a, b schemas.Announcement) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// Agents lists the live agents sorted by name.
func (r *Registry) Agents() []AgentInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]AgentInfo, 0, len(r.agents))
	for name := range r.agents {
		out = append(out, r.infoLocked(name))
	}
	slices.SortFunc(out, func(a, b AgentInfo) int { return strings.Compare(a.Contract.Name, b.Contract.Name) })
	return out
}

// Lookup returns the live agent called name.
func (r *Registry) Lookup(name string) (AgentInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.agents[name]) == 0 {
		return AgentInfo{}, false
	}
	return r.infoLocked(name), true
}

func (r *Registry) infoLocked(name string) AgentInfo {
	var (
		info AgentInfo
		rev  uint64
	)
	for _, e := range r.agents[name] {
		info.Instances = append(info.Instances, e.ann.Instance)
		if e.revision >= rev {
			rev, info.Contract = e.revision, e.ann.Contract
		}
	}
	info.Contract.Name = name
	slices.SortFunc(info.Instances, func(a, b schemas.InstanceInfo) int { return strings.Compare(a.ID, b.ID) })
	return info
}

// LastHeartbeat returns when the server stored the latest announcement of
// instance of agent (its last heartbeat), and false for an instance that is
// not live.
func (r *Registry) LastHeartbeat(agent, instance string) (time.Time, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.agents[agent][instance]
	return e.seen, ok
}

// Changes returns a channel that is closed at the next change of the view:
// an instance joining or leaving, or an announcement that differs from the
// instance's previous one. Call it again after it fires.
func (r *Registry) Changes() <-chan struct{} {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.changed
}

// Wait blocks until at least instances instances of the agent called name
// are live, or ctx ends.
func (r *Registry) Wait(ctx context.Context, name string, instances int) error {
	for {
		ch := r.Changes()
		info, _ := r.Lookup(name)
		if len(info.Instances) >= instances {
			return nil
		}
		select {
		case <-ch:
		case <-r.done:
			return fmt.Errorf("client: registry stopped while waiting for %d instance(s) of %s", instances, name)
		case <-ctx.Done():
			return fmt.Errorf("client: waiting for %d instance(s) of agent %s (%d live): %w", instances, name, len(info.Instances), context.Cause(ctx))
		}
	}
}

// Stop ends the watch. It is safe to call more than once.
func (r *Registry) Stop() {
	r.stopOnce.Do(func() {
		r.wmu.Lock()
		close(r.stopped)
		w := r.w
		r.wmu.Unlock()
		_ = w.Stop()
	})
}
