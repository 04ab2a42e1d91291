package security

import (
	"errors"
	"fmt"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// Quotas are the mesh account's limits, which the server enforces for all
// its identities together (NATS has no per-user connection limit). Zero
// is no limit.
type Quotas struct {
	Connections int64 // client connections at once, the server's own included
	Store       int64 // bytes of JetStream file storage
	Memory      int64 // bytes of JetStream memory storage
	Streams     int64 // JetStream streams (KV buckets and object stores are streams)
	Consumers   int64 // JetStream consumers
}

// Validate reports every negative quota at once.
func (q Quotas) Validate() error {
	var errs []error
	for _, f := range []struct {
		flag string
		v    int64
	}{{"--max-connections", q.Connections}, {"--max-store", q.Store}, {"--max-memory", q.Memory}, {"--max-streams", q.Streams}, {"--max-consumers", q.Consumers}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d: give zero (no limit) or more", f.flag, f.v))
		}
	}
	return errors.Join(errs...)
}

// limit is a quota as a JWT limit: zero is none.
func limit(v int64) int64 {
	if v == 0 {
		return jwt.NoLimit
	}
	return v
}

// apply sets the account's limits to q.
func (q Quotas) apply(ac *jwt.AccountClaims) {
	ac.Limits.Conn = limit(q.Connections)
	js := &ac.Limits.JetStreamLimits
	js.DiskStorage, js.MemoryStorage = limit(q.Store), limit(q.Memory)
	js.Streams, js.Consumer = limit(q.Streams), limit(q.Consumers)
}

// SetQuotas makes q the mesh account's limits, revising it (ReviseAccount)
// only when they differ from the ones it has; srv as there.
func (a *Authority) SetQuotas(srv *server.Server, q Quotas) error {
	if err := q.Validate(); err != nil {
		return err
	}
	ac, err := a.AccountClaims()
	if err != nil {
		return err
	}
	want := *ac
	q.apply(&want)
	if want.Limits.Conn == ac.Limits.Conn && want.Limits.JetStreamLimits == ac.Limits.JetStreamLimits {
		return nil
	}
	return a.ReviseAccount(srv, q.apply)
}
