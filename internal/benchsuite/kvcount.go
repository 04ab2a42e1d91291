package benchsuite

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// kvCounter counts the KV writes (and the bytes of their values) the
// server routes for some buckets: every put, update, delete and purge of a
// key is a message on $KV.<bucket>.<key>, which a plain subscriber sees as
// it is stored.
type kvCounter struct {
	writes, bytes atomic.Int64
	last          atomic.Int64 // unix nanoseconds of the last write seen
	subs          []*nats.Subscription
}

// countKV subscribes on nc to the writes of buckets.
func countKV(nc *nats.Conn, buckets ...string) (*kvCounter, error) {
	c := &kvCounter{}
	for _, b := range buckets {
		sub, err := nc.Subscribe("$KV."+b+".>", func(m *nats.Msg) {
			c.writes.Add(1)
			c.bytes.Add(int64(len(m.Data)))
			c.last.Store(time.Now().UnixNano())
		})
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		// A wave's writes come in bursts: never drop one as a slow consumer.
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			return nil, errors.Join(err, c.Close())
		}
		c.subs = append(c.subs, sub)
	}
	return c, nc.Flush()
}

// kvCount is a reading of a kvCounter.
type kvCount struct{ writes, bytes int64 }

// read is the count so far.
func (c *kvCounter) read() kvCount { return kvCount{c.writes.Load(), c.bytes.Load()} }

// since is what was counted after r.
func (c *kvCounter) since(r kvCount) kvCount {
	now := c.read()
	return kvCount{now.writes - r.writes, now.bytes - r.bytes}
}

// settle waits until no write came for 100ms (at most three seconds), so
// that writes made after a run's end event are counted with its run.
func (c *kvCounter) settle() {
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		if time.Since(time.Unix(0, c.last.Load())) >= 100*time.Millisecond {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close unsubscribes.
func (c *kvCounter) Close() error {
	var errs []error
	for _, s := range c.subs {
		errs = append(errs, s.Unsubscribe())
	}
	return errors.Join(errs...)
}
