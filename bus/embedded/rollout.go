package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// FollowRollouts applies the mesh's agent rollouts to this server until ctx
// ends (docs/protocol.md, "Versions and rollouts"). It watches the
// rollouts bucket of n, once it exists (it does not make it), through nc,
// a connection to this server, and for
// each rollout sets the weighted subject mapping of mesh.task.<agent> in
// the account nc is bound to (the global account of a plain server, the
// mesh's account of a secure one); a rollout removed removes its mapping.
// Once it has applied every rollout up to a revision it writes that
// revision under applied.<server name>, which 'agentmesh rollout' waits
// for. For a rollout in shadow mode it also copies each task on the From
// version's subject to the To version's, marked with bus.HeaderShadow
// (one copy per task however many servers follow: the copiers share a
// queue group).
//
// m sets and removes the mappings; nil sets them on the account in the
// server's memory (AccountMapper). Those live as long as the server: one
// that restarts sets them again from the bucket as it starts following.
// On a secure server whose account JWT is revised at run time, m must
// write them into the account's claims (an update of the claims drops the
// mappings they do not hold); such a mapper may also be a RolloutPruner.
func (e *Server) FollowRollouts(ctx context.Context, nc *nats.Conn, n bus.Names, log *slog.Logger, m RolloutMapper) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if m == nil {
		acc, err := e.accountOf(nc)
		if err != nil {
			return err
		}
		m = AccountMapper{acc}
	}
	f := &follower{e: e, nc: nc, mapper: m, names: n, log: log, shadows: map[string]*nats.Subscription{}, mapped: map[string]bool{}}
	go f.run(ctx, js)
	return nil
}

// bindRetry is how often a follower looks again for the rollouts bucket
// (made by the first process that provisions the mesh, or by 'agentmesh
// rollout') and watches it again after its watch ended.
const bindRetry = 2 * time.Second

// run binds the rollouts bucket once it exists (a cluster electing its
// leaders, a mesh not yet provisioned), then applies what it holds and
// every change, until ctx ends.
func (f *follower) run(ctx context.Context, js jetstream.JetStream) {
	defer f.stopShadows()
	for ctx.Err() == nil {
		kv, err := js.KeyValue(ctx, f.names.RolloutsBucket())
		if err == nil {
			f.kv = kv
			err = f.follow(ctx, kv)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			f.log.Debug("following rollouts", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(bindRetry):
		}
	}
}

// follow applies the rollouts of kv and every change until ctx ends or
// the watch does.
func (f *follower) follow(ctx context.Context, kv jetstream.KeyValue) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watching %s: %w", f.names.RolloutsBucket(), err)
	}
	defer func() { _ = w.Stop() }()
	var last uint64
	initial := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case ent, ok := <-w.Updates():
			if !ok {
				return errors.New("the watch of the rollouts ended")
			}
			if ent == nil { // every rollout there was at start is applied
				initial = false
				f.prune()
				f.ack(ctx, last)
				continue
			}
			if strings.Contains(ent.Key(), ".") {
				continue // an applied.<server> acknowledgment
			}
			last = max(last, ent.Revision())
			f.apply(ent)
			if !initial {
				f.ack(ctx, last)
			}
		}
	}
}

// RolloutMapper sets and removes the subject mapping of a rollout on a
// server: src is mesh.task.<agent>, to its destinations (bus.RolloutMapping).
type RolloutMapper interface {
	SetMapping(src string, to []bus.RolloutTarget) error
	RemoveMapping(src string) error
}

// AccountMapper sets mappings on an account in the server's memory
// (Account.AddWeightedMappings).
type AccountMapper struct{ Account *server.Account }

// SetMapping maps src onto to, replacing src's mapping.
func (a AccountMapper) SetMapping(src string, to []bus.RolloutTarget) error {
	dests := make([]*server.MapDest, len(to))
	for i, t := range to {
		dests[i] = server.NewMapDest(t.Subject, uint8(t.Percent))
	}
	return a.Account.AddWeightedMappings(src, dests...)
}

// RemoveMapping removes src's mapping, if any.
func (a AccountMapper) RemoveMapping(src string) error {
	a.Account.RemoveMapping(src)
	return nil
}

// RolloutPruner is a RolloutMapper whose mappings outlive the server (an
// account JWT): once the rollouts there were at start are applied, Prune
// removes the mappings of task subjects keep does not name.
type RolloutPruner interface {
	Prune(keep map[string]bool) error
}

// follower applies rollouts to one server.
type follower struct {
	e      *Server
	nc     *nats.Conn
	kv     jetstream.KeyValue
	mapper RolloutMapper
	names  bus.Names
	log    *slog.Logger

	mu      sync.Mutex
	shadows map[string]*nats.Subscription // agent -> its shadow copier
	lastErr string
	mapped  map[string]bool // the task subjects the rollouts applied at start map
}

// prune hands the mapper the subjects the rollouts at start mapped.
func (f *follower) prune() {
	p, ok := f.mapper.(RolloutPruner)
	if !ok {
		return
	}
	f.mu.Lock()
	keep := f.mapped
	f.mu.Unlock()
	if err := p.Prune(keep); err != nil {
		f.log.Error("removing the mappings of rollouts gone", "err", err)
	}
}

// accountOf returns the account nc's connection is bound to on this server.
func (e *Server) accountOf(nc *nats.Conn) (*server.Account, error) {
	cid, err := nc.GetClientID()
	if err != nil {
		return nil, fmt.Errorf("rollouts: the id of this server's own connection: %w", err)
	}
	cz, err := e.srv.Connz(&server.ConnzOptions{CID: cid, Username: true}) // Username: with the account
	if err != nil || len(cz.Conns) != 1 {
		return nil, fmt.Errorf("rollouts: the connection that follows rollouts is not one of this server's (client id %d): connect it to this server", cid)
	}
	name := cz.Conns[0].Account
	if name == "" {
		name = server.DEFAULT_GLOBAL_ACCOUNT
	}
	acc, err := e.srv.LookupAccount(name)
	if err != nil {
		return nil, fmt.Errorf("rollouts: account %s: %w", name, err)
	}
	return acc, nil
}

// apply sets (or, for a deleted key, removes) the mapping of one rollout.
func (f *follower) apply(ent jetstream.KeyValueEntry) {
	agent := ent.Key()
	src, err := f.names.Task(agent)
	if err != nil {
		f.fail(agent, err)
		return
	}
	if ent.Operation() != jetstream.KeyValuePut {
		if err := f.mapper.RemoveMapping(src); err != nil {
			f.fail(agent, fmt.Errorf("removing the mapping of %s: %w", src, err))
			return
		}
		f.setShadow(agent, schemas.Rollout{})
		f.log.Info("rollout removed", "agent", agent)
		return
	}
	var r schemas.Rollout
	if err := json.Unmarshal(ent.Value(), &r); err != nil {
		f.fail(agent, fmt.Errorf("value at revision %d does not decode: %w", ent.Revision(), err))
		return
	}
	if r.Agent != agent {
		f.fail(agent, fmt.Errorf("the rollout under key %s names agent %q", agent, r.Agent))
		return
	}
	_, targets, err := f.names.RolloutMapping(r)
	if err != nil {
		f.fail(agent, err)
		return
	}
	if err := f.mapper.SetMapping(src, targets); err != nil {
		f.fail(agent, fmt.Errorf("mapping %s: %w", src, err))
		return
	}
	f.setShadow(agent, r)
	f.mu.Lock()
	f.lastErr = ""
	f.mapped[src] = true
	f.mu.Unlock()
	f.log.Info("rollout applied", "agent", agent, "from", r.From, "to", r.To, "weight", r.Weight, "shadow", r.Shadow)
}

func (f *follower) fail(agent string, err error) {
	f.log.Error("rollout not applied", "agent", agent, "err", err)
	f.mu.Lock()
	f.lastErr = fmt.Sprintf("rollout of %s: %v", agent, err)
	f.mu.Unlock()
}

// ack writes the revision this server has applied.
func (f *follower) ack(ctx context.Context, rev uint64) {
	f.mu.Lock()
	a := schemas.RolloutApplied{Server: f.e.srv.Name(), Revision: rev, At: time.Now().UTC(), Error: f.lastErr}
	f.mu.Unlock()
	b, _ := json.Marshal(a)
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := f.kv.Put(actx, bus.RolloutAppliedKey(bus.ServerKey(a.Server)), b); err != nil && ctx.Err() == nil {
		f.log.Warn("acknowledging rollouts", "revision", rev, "err", err)
	}
}

// setShadow starts, changes or stops the shadow copier of agent as r asks.
func (f *follower) setShadow(agent string, r schemas.Rollout) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sub := f.shadows[agent]; sub != nil {
		_ = sub.Unsubscribe()
		delete(f.shadows, agent)
	}
	if !r.Shadow {
		return
	}
	from, err1 := f.names.TaskVersion(agent, r.From)
	to, err2 := f.names.TaskVersion(agent, r.To)
	if err := errors.Join(err1, err2); err != nil {
		f.log.Error("shadow copies", "agent", agent, "err", err)
		return
	}
	sub, err := f.nc.QueueSubscribe(from, "agentmesh-shadow", func(m *nats.Msg) {
		if m.Header.Get(bus.HeaderShadow) != "" {
			return
		}
		cp := nats.NewMsg(to)
		for k, v := range m.Header {
			cp.Header[k] = v
		}
		cp.Header.Set(bus.HeaderShadow, "1")
		if id := m.Header.Get(jetstream.MsgIDHeader); id != "" {
			cp.Header.Set(jetstream.MsgIDHeader, "shadow-"+id) // not the original's duplicate
		}
		cp.Data = m.Data
		if err := f.nc.PublishMsg(cp); err != nil {
			f.log.Warn("shadow copy", "agent", agent, "err", err)
		}
	})
	if err != nil {
		f.log.Error("shadow copies", "agent", agent, "err", err)
		return
	}
	f.shadows[agent] = sub
}

func (f *follower) stopShadows() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for a, sub := range f.shadows {
		_ = sub.Unsubscribe()
		delete(f.shadows, a)
	}
}
