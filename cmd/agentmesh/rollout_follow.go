package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/security"
)

// followRollouts makes srv, the embedded server of this process, apply the
// mesh's agent rollouts (embedded.Server.FollowRollouts). nc is the
// server's own connection when it has one (a secure server's, as admin,
// which counts against --max-connections); with nil it makes one. On a
// secure server (sec not nil) the mappings go into the mesh account's
// claims, so that the account's other revisions (revocations, quotas) keep
// them. It returns what stops it. A server that cannot follow still
// serves: it says so on log, and 'agentmesh rollout' reports that no
// server applied a rollout.
func (a *app) followRollouts(ctx context.Context, srv *embedded.Server, sec *security.Server, nc *nats.Conn, log io.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	names, err := bus.NewNames(a.prefix)
	own := nc == nil
	if err == nil && own {
		opts := bus.OptionsFromEnv()
		opts.URL = dialURL(srv.URL())
		opts.CredsFile, opts.TLSCA = a.creds, a.tlsCA
		opts.Name = "agentmesh server (rollouts)"
		nc, err = opts.Connect(ctx)
	}
	if err == nil {
		var m embedded.RolloutMapper
		if sec != nil {
			m = accountMapper{auth: sec.Authority, srv: srv.NATS(), prefix: names.Prefix() + ".task."}
		}
		err = srv.FollowRollouts(ctx, nc, names, a.logger(false), m)
	}
	if err != nil {
		cancel()
		if own && nc != nil {
			nc.Close()
		}
		fmt.Fprintf(log, "agentmesh: rollouts are not applied by this server: %v\n", err)
		return func() {}
	}
	return func() {
		cancel()
		if own {
			nc.Close()
		}
	}
}

// accountMapper writes rollouts' mappings into the secure mesh account's
// claims (security.Authority.ReviseAccount): the server applies them at
// once, every later revision keeps them, and a restart starts with them.
type accountMapper struct {
	auth   *security.Authority
	srv    *server.Server
	prefix string // of the subjects rollouts map, mesh.task.
}

func (m accountMapper) SetMapping(src string, to []bus.RolloutTarget) error {
	return m.auth.ReviseAccount(m.srv, func(ac *jwt.AccountClaims) {
		wm := make([]jwt.WeightedMapping, len(to))
		for i, t := range to {
			wm[i] = jwt.WeightedMapping{Subject: jwt.Subject(t.Subject), Weight: uint8(t.Percent)}
		}
		ac.Mappings[jwt.Subject(src)] = wm
	})
}

func (m accountMapper) RemoveMapping(src string) error {
	return m.auth.ReviseAccount(m.srv, func(ac *jwt.AccountClaims) { delete(ac.Mappings, jwt.Subject(src)) })
}

// Prune removes the mappings of task subjects no rollout names any more
// (one removed while the server was down), keeping the others'.
func (m accountMapper) Prune(keep map[string]bool) error {
	ac, err := m.auth.AccountClaims()
	if err != nil {
		return err
	}
	var stale []jwt.Subject
	for s := range ac.Mappings {
		if strings.HasPrefix(string(s), m.prefix) && !keep[string(s)] {
			stale = append(stale, s)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	return m.auth.ReviseAccount(m.srv, func(ac *jwt.AccountClaims) {
		for _, s := range stale {
			delete(ac.Mappings, s)
		}
	})
}
