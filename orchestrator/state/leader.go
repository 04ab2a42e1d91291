package state

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reads from the stream's leader. A KV bucket answers Get by direct get
// (AllowDirect, which nats.go sets on every bucket): any replica of its
// stream answers, and a client's own server answers first. On a cluster
// that server may hold a replica that is behind: cut off from the others,
// or healed and still catching up. Its answer is then an earlier revision,
// or no key at all for one the others stored (a step's record, the run's
// slots), and a replica deciding on it (a step's input "has no source")
// decides wrong. A read from the leader (the JetStream API's message get,
// which only the leader answers) is the stream's last word; when no leader
// is reachable it gets no answer, tried again while transient (see
// retryKV), never a stale one. (One window is left: a leader cut off
// answers until it finds it lost its majority, a few seconds; JetStream
// has no read that rules that out.)

// WithLeaderReads makes the store's reads go to the leader of its bucket's
// stream, through js (its connection and API prefix): what a scheduler
// decides on is then never behind what was written. Keys written once (a
// run's spec, step and item records) are still read by direct get, and
// from the leader only when that does not find them (see getOnceJSON).
// Without it reads are direct gets, answered by any replica (cheaper, and
// stale on a lagging one).
func WithLeaderReads(js jetstream.JetStream) Option { return func(s *Store) { s.leaderJS = js } }

// leaderTry bounds one read from the leader: a request lost while the
// cluster elects one is sent again (retryKV) rather than waited on.
const leaderTry = 5 * time.Second

// leaderKV is a bucket whose Get reads from its stream's leader; the rest
// is the bucket's own.
type leaderKV struct {
	jetstream.KeyValue
	nc      *nats.Conn
	subject string // <api prefix>STREAM.MSG.GET.KV_<bucket>
	keys    string // $KV.<bucket>.
}

// leader wraps kv (nil stays nil) to read through js's connection.
func leader(js jetstream.JetStream, kv jetstream.KeyValue) jetstream.KeyValue {
	if kv == nil || js == nil {
		return kv
	}
	return leaderKV{KeyValue: kv, nc: js.Conn(), subject: apiPrefix(js.Options()) + "STREAM.MSG.GET.KV_" + kv.Bucket(), keys: "$KV." + kv.Bucket() + "."}
}

// apiPrefix is the subject prefix of the JetStream API js talks to.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	}
	return jetstream.DefaultAPIPrefix
}

// msgGetResponse is the JetStream API's answer to a message get.
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// Get reads the last revision of key from the leader. A key never written
// is jetstream.ErrKeyNotFound, one deleted or purged ErrKeyDeleted, as
// the bucket's own Get says.
func (k leaderKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	req, err := json.Marshal(map[string]string{"last_by_subj": k.keys + key})
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, leaderTry)
	defer cancel()
	m, err := k.nc.RequestWithContext(tctx, k.subject, req)
	if err != nil {
		return nil, fmt.Errorf("reading %s from the leader of bucket %s: %w", key, k.Bucket(), err)
	}
	var resp msgGetResponse
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, fmt.Errorf("reading %s from the leader of bucket %s: an answer that does not decode: %w", key, k.Bucket(), err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, jetstream.ErrKeyNotFound
	case resp.Error != nil:
		return nil, resp.Error
	case resp.Message == nil:
		return nil, fmt.Errorf("reading %s from the leader of bucket %s: %w", key, k.Bucket(), jetstream.ErrInvalidJetStreamResponse)
	}
	e := &leaderEntry{bucket: k.Bucket(), key: key, value: resp.Message.Data, rev: resp.Message.Sequence,
		created: resp.Message.Time, op: jetstream.KeyValuePut}
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err != nil {
			return nil, fmt.Errorf("reading %s from the leader of bucket %s: headers: %w", key, k.Bucket(), err)
		}
		switch {
		case h.Get("KV-Operation") == "DEL" || h.Get(jetstream.MarkerReasonHeader) == "Remove":
			e.op = jetstream.KeyValueDelete
		case h.Get("KV-Operation") == "PURGE" || h.Get(jetstream.MarkerReasonHeader) != "":
			e.op = jetstream.KeyValuePurge
		}
	}
	if e.op != jetstream.KeyValuePut {
		return e, jetstream.ErrKeyDeleted
	}
	return e, nil
}

// leaderEntry is a jetstream.KeyValueEntry read from the leader.
type leaderEntry struct {
	bucket, key string
	value       []byte
	rev         uint64
	created     time.Time
	op          jetstream.KeyValueOp
}

func (e *leaderEntry) Bucket() string                  { return e.bucket }
func (e *leaderEntry) Key() string                     { return e.key }
func (e *leaderEntry) Value() []byte                   { return e.value }
func (e *leaderEntry) Revision() uint64                { return e.rev }
func (e *leaderEntry) Created() time.Time              { return e.created }
func (e *leaderEntry) Delta() uint64                   { return 0 }
func (e *leaderEntry) Operation() jetstream.KeyValueOp { return e.op }
