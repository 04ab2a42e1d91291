package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// shared is the state every process's clients share through one KV bucket
// (bus.Names.LLMBucket, made by bus.Provision): the budget ledger and the
// rate limits. Every change is a compare-and-set on one key, so replicas
// and agent instances on other machines count together.
type shared struct {
	js    jetstream.JetStream
	kv    jetstream.KeyValue // nil: the process-local ledger (local)
	keyID string             // a short hash of the provider key, naming its rate limit's state
	hold  time.Duration      // how long an attempt in flight holds its rate slot if its process dies
}

// sharedTimeout bounds a write made after the caller's ctx may have ended:
// settling a budget, freeing a rate slot.
const sharedTimeout = 5 * time.Second

// WithShared returns a copy of c whose calls count in the mesh's shared LLM
// state, the KV bucket kv (bus.Resources.LLM) on js: budgets set on a call's
// context with WithBudget are reserved and charged in its ledger, and the
// rate limits declared in it (DeclareRateLimits) hold every attempt, with
// a provider's 429 and Retry-After blocking the model for every process.
// c itself is not changed.
func (c *Client) WithShared(js jetstream.JetStream, kv jetstream.KeyValue) *Client {
	cp := *c
	sum := sha256.Sum256([]byte(c.cfg.APIKey))
	cp.shared = &shared{js: js, kv: kv, keyID: hex.EncodeToString(sum[:6]), hold: c.cfg.Timeout}
	return &cp
}

// update applies fn to the value of key (nil when there is none) and
// writes the result with a compare-and-set, trying again when another
// process wrote first. A key it creates lives for ttl (0: as long as the
// bucket keeps it). fn returning nil leaves the key as it is.
func (s *shared) update(ctx context.Context, key string, ttl time.Duration, fn func(cur []byte) ([]byte, error)) error {
	if s.kv == nil {
		return local.update(key, ttl, fn)
	}
	for {
		var (
			cur []byte
			rev uint64
		)
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("reading %s in the LLM bucket %s: %w", key, s.kv.Bucket(), err)
		default:
			cur, rev = e.Value(), e.Revision()
		}
		next, err := fn(cur)
		if err != nil || next == nil {
			return err
		}
		switch {
		case rev == 0:
			var opts []jetstream.KVCreateOpt
			if ttl > 0 {
				opts = append(opts, jetstream.KeyTTL(ttl))
			}
			_, err = s.kv.Create(ctx, key, next, opts...)
		case ttl > 0:
			// KeyValue.Update cannot give the new revision a TTL: without
			// one a budget's key would outlive it once written twice.
			_, err = s.js.Publish(ctx, "$KV."+s.kv.Bucket()+"."+key, next,
				jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
		default:
			_, err = s.kv.Update(ctx, key, next, rev)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch), wrongLastSequence(err):
			continue // another process wrote first: apply fn to its value
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			return fmt.Errorf("writing %s in the LLM bucket %s: %w", key, s.kv.Bucket(), err)
		}
	}
}

// localLedger holds the budgets of a client without the mesh's bucket
// (WithShared not called): they count in this process only, which is
// right for a task's budget (one process runs a task) and a test's. It
// keeps at most localMaxKeys keys, forgetting expired ones first.
type localLedger struct {
	mu   sync.Mutex
	vals map[string]localValue
}

type localValue struct {
	b       []byte
	expires time.Time
}

const localMaxKeys = 4096

var (
	local       = &localLedger{vals: map[string]localValue{}}
	localShared = &shared{}
)

func (l *localLedger) update(key string, ttl time.Duration, fn func(cur []byte) ([]byte, error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	v, ok := l.vals[key]
	if ok && !v.expires.IsZero() && now.After(v.expires) {
		v, ok = localValue{}, false
	}
	next, err := fn(v.b)
	if err != nil || next == nil {
		return err
	}
	if !ok {
		if ttl > 0 {
			v.expires = now.Add(ttl)
		}
		if len(l.vals) >= localMaxKeys {
			l.prune(now)
		}
	}
	v.b = next
	l.vals[key] = v
	return nil
}

// prune forgets expired keys, then as many others as it takes to make room.
func (l *localLedger) prune(now time.Time) {
	for k, v := range l.vals {
		if !v.expires.IsZero() && now.After(v.expires) {
			delete(l.vals, k)
		}
	}
	for k := range l.vals {
		if len(l.vals) < localMaxKeys {
			return
		}
		delete(l.vals, k)
	}
}

// wrongLastSequence reports a compare-and-set that lost: the key has a
// newer revision than the one the write expected.
func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// keyPart makes s usable in a KV key: bytes other than letters, digits,
// '-', '_', '/' and '=' become '_' ("llama3.2:3b" is "llama3_2_3b").
func keyPart(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '/', r == '=':
			return r
		}
		return '_'
	}, s)
}

// EstimateTokens is a rough count of the tokens m takes in a prompt (four
// bytes a token, and a few for the message's framing), as the chat loop's
// history pruning and the budgets' estimate of a call count them.
func EstimateTokens(m Message) int {
	n := len(m.Content) + len(m.Name)
	for _, tc := range m.ToolCalls {
		n += len(tc.Name) + len(tc.Arguments)
	}
	return n/4 + 4
}

// estimatePrompt is the estimated prompt tokens of req: its messages and
// its tools' names, descriptions and schemas.
func estimatePrompt(req Request) int64 {
	var n int64
	for _, m := range req.Messages {
		n += int64(EstimateTokens(m))
	}
	for _, t := range req.Tools {
		n += int64(len(t.Name)+len(t.Description)+len(t.Parameters))/4 + 4
	}
	if req.Output != nil {
		n += int64(len(req.Output.Schema)) / 4
	}
	return n
}
