package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// kvCounter counts the KV writes of some buckets two ways. Every put,
// update, delete and purge of a key is a publish on $KV.<bucket>.<key>,
// which a plain subscriber sees whether or not the bucket's stream stores
// it (a compare-and-set on a stale revision is refused after it was
// sent): those are the publishes and their value bytes. The writes stored
// are the growth of each bucket's stream's last sequence.
type kvCounter struct {
	publishes, bytes atomic.Int64
	last             atomic.Int64 // unix nanoseconds of the last publish seen
	subs             []*nats.Subscription
	streams          []jetstream.Stream
}

// countKV subscribes on nc to the writes of buckets.
func countKV(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, buckets ...string) (*kvCounter, error) {
	c := &kvCounter{}
	for _, b := range buckets {
		s, err := js.Stream(ctx, "KV_"+b)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("the stream of bucket %s: %w", b, err), c.Close())
		}
		c.streams = append(c.streams, s)
		sub, err := nc.Subscribe("$KV."+b+".>", func(m *nats.Msg) {
			c.publishes.Add(1)
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
type kvCount struct{ stored, publishes, bytes int64 }

// read is the count so far: the publishes seen, and the writes stored
// (one stream info request per bucket; a bucket whose info does not come
// makes stored -1).
func (c *kvCounter) read() kvCount {
	r := kvCount{publishes: c.publishes.Load(), bytes: c.bytes.Load()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range c.streams {
		info, err := s.Info(ctx)
		if err != nil {
			return kvCount{stored: -1, publishes: r.publishes, bytes: r.bytes}
		}
		r.stored += int64(info.State.LastSeq)
	}
	return r
}

// minus is what was counted between r0 and r (stored -1 when either
// reading lacks it).
func (r kvCount) minus(r0 kvCount) kvCount {
	d := kvCount{stored: r.stored - r0.stored, publishes: r.publishes - r0.publishes, bytes: r.bytes - r0.bytes}
	if r.stored < 0 || r0.stored < 0 {
		d.stored = -1
	}
	return d
}

// plus adds up two counts (stored -1 when either lacks it).
func (r kvCount) plus(d kvCount) kvCount {
	s := kvCount{stored: r.stored + d.stored, publishes: r.publishes + d.publishes, bytes: r.bytes + d.bytes}
	if r.stored < 0 || d.stored < 0 {
		s.stored = -1
	}
	return s
}

// report reports the count per unit (e.g. "step", "turn@1-10") over n
// units: kv-writes (stored), kv-publishes and kv-B (the publishes' value
// bytes).
func (r kvCount) report(b interface{ ReportMetric(float64, string) }, n float64, unit string) {
	if r.stored >= 0 {
		b.ReportMetric(float64(r.stored)/n, "kv-writes/"+unit)
	}
	b.ReportMetric(float64(r.publishes)/n, "kv-publishes/"+unit)
	b.ReportMetric(float64(r.bytes)/n, "kv-B/"+unit)
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
