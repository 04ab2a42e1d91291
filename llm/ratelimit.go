package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentmesh/agentmesh/schemas"
)

// EnvRateLimits declares the shared rate limits (RateLimits as JSON); a
// process started with it writes them to the LLM bucket, where every
// process reads them.
const EnvRateLimits = "AGENTMESH_LLM_LIMITS"

// RateLimit is how many requests, and how many tokens, the calls of every
// process together may send in any window. A zero field is no limit.
type RateLimit struct {
	Requests int   `json:"requests,omitempty"`
	Tokens   int64 `json:"tokens,omitempty"`
}

// RateLimits are the limits declared for the mesh: per model (its name as
// requests give it, without the provider prefix) and per provider key
// (ProviderOpenAI, ProviderAnthropic, ProviderGemini: every model called
// with that provider's key, each key counted apart), over Window (default
// a minute).
type RateLimits struct {
	Window    Duration             `json:"window,omitempty"`
	Models    map[string]RateLimit `json:"models,omitempty"`
	Providers map[string]RateLimit `json:"providers,omitempty"`
}

// Duration is a time.Duration written in JSON as Go writes it ("1m", "500ms").
type Duration time.Duration

// MarshalJSON writes d as a string such as "1m0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a string such as "1m" or "500ms".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("window %s is not a string such as \"1m\"", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("window %q is not a positive duration such as \"1m\"", s)
	}
	*d = Duration(v)
	return nil
}

// DefaultRateWindow is the window of RateLimits that name none.
const DefaultRateWindow = time.Minute

// MaxRateRequests bounds a limit's requests per window: each is a slot in
// one KV value (about 90 bytes), rewritten by every call. A higher rate is
// declared over a shorter window (100 requests a 3s rather than 2000 a
// minute). A limit of tokens alone holds at most this many calls a window.
const MaxRateRequests = 2000

func (l RateLimits) window() time.Duration {
	if l.Window <= 0 {
		return DefaultRateWindow
	}
	return time.Duration(l.Window)
}

// Validate reports every limit that is negative or names an unknown
// provider.
func (l RateLimits) Validate() error {
	var errs []error
	check := func(kind, name string, r RateLimit) {
		if r.Requests < 0 || r.Tokens < 0 {
			errs = append(errs, fmt.Errorf("%s %q: requests %d and tokens %d must be 0 (no limit) or more", kind, name, r.Requests, r.Tokens))
		}
		if r.Requests > MaxRateRequests {
			errs = append(errs, fmt.Errorf("%s %q: requests %d a window is over the most the mesh counts, %d: declare a shorter window with proportionally fewer requests", kind, name, r.Requests, MaxRateRequests))
		}
	}
	for m, r := range l.Models {
		check("model", m, r)
	}
	for p, r := range l.Providers {
		check("provider", p, r)
		if p != ProviderOpenAI && p != ProviderAnthropic && p != ProviderGemini {
			errs = append(errs, fmt.Errorf("provider %q is not %s, %s or %s", p, ProviderOpenAI, ProviderAnthropic, ProviderGemini))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: rate limits: %w", ErrInvalidConfig, err)
	}
	return nil
}

// ParseRateLimits reads RateLimits from JSON such as
// {"window": "1m", "models": {"gpt-4o-mini": {"requests": 500, "tokens": 200000}}, "providers": {"openai": {"requests": 3000}}}.
func ParseRateLimits(s string) (RateLimits, error) {
	var l RateLimits
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return RateLimits{}, fmt.Errorf("%w: rate limits %q: %v (want {\"window\": \"1m\", \"models\": {\"MODEL\": {\"requests\": N, \"tokens\": N}}, \"providers\": {\"openai\": {...}}})", ErrInvalidConfig, s, err)
	}
	return l, l.Validate()
}

// RateLimitsFromEnv reads AGENTMESH_LLM_LIMITS; ok is false when it is unset.
func RateLimitsFromEnv() (l RateLimits, ok bool, err error) {
	s := os.Getenv(EnvRateLimits)
	if s == "" {
		return RateLimits{}, false, nil
	}
	l, err = ParseRateLimits(s)
	if err != nil {
		return l, true, fmt.Errorf("%s: %w", EnvRateLimits, err)
	}
	return l, true, nil
}

// rateLimitsKey is the key of the declared limits in the LLM bucket.
const rateLimitsKey = "config.limits"

// DeclareRateLimits writes l to the mesh's LLM bucket kv, where every
// process's clients read it before each attempt: declared once, by any
// process (or `nats kv put mesh_llm config.limits JSON`), it holds for all.
func DeclareRateLimits(ctx context.Context, kv jetstream.KeyValue, l RateLimits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, rateLimitsKey, b); err != nil {
		return fmt.Errorf("writing the rate limits to %s in %s: %w", rateLimitsKey, kv.Bucket(), err)
	}
	return nil
}

func (s *shared) rateLimits(ctx context.Context) (RateLimits, error) {
	e, err := s.kv.Get(ctx, rateLimitsKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return RateLimits{}, nil
	}
	if err != nil {
		return RateLimits{}, fmt.Errorf("reading the rate limits (%s in %s): %w", rateLimitsKey, s.kv.Bucket(), err)
	}
	var l RateLimits
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return RateLimits{}, fmt.Errorf("%w: the rate limits in %s of %s do not decode: %v; declare them again", ErrInvalidConfig, rateLimitsKey, s.kv.Bucket(), err)
	}
	return l, nil
}

// rateState is the state of one limit, one KV value changed only by
// compare-and-set: the slots taken in the window and the time a provider's
// 429 blocks everyone until.
//
// A slot is taken before an attempt is sent and stays taken while it is in
// flight (at most the lease, in case its process dies); when the answer
// comes back the slot stays taken for a whole window more. A request
// reaches the provider after its slot was taken and before its answer came
// back, so two requests on the same slot arrive more than a window apart,
// whatever the network's delays: with Requests slots, the provider never
// sees more than Requests in any window. The price is a little throughput
// (a slot is idle for the length of a call), which is the right side to
// err on when the other side is a 429.
type rateState struct {
	BlockedUntil time.Time  `json:"blocked_until,omitzero"`
	Slots        []rateSlot `json:"slots,omitempty"`
}

type rateSlot struct {
	ID     string    `json:"id"`
	Until  time.Time `json:"until"` // in flight: the lease's end; done: when the slot frees
	Tokens int64     `json:"tokens"`
	Done   bool      `json:"done,omitempty"`
}

// admit reports whether a call of tokens may go at now; if not, the
// earliest time it might.
func (st *rateState) admit(now time.Time, lim RateLimit, window time.Duration, tokens int64) (bool, time.Time) {
	live := st.Slots[:0]
	for _, s := range st.Slots {
		if s.Until.After(now) {
			live = append(live, s)
		}
	}
	st.Slots = live
	if now.Before(st.BlockedUntil) {
		return false, st.BlockedUntil
	}
	var sum int64
	earliest := time.Time{}
	for _, s := range st.Slots {
		sum += s.Tokens
		free := s.Until
		if !s.Done {
			free = now.Add(window) // its answer comes at now at the earliest
		}
		if earliest.IsZero() || free.Before(earliest) {
			earliest = free
		}
	}
	full := len(st.Slots) >= MaxRateRequests || lim.Requests > 0 && len(st.Slots) >= lim.Requests ||
		lim.Tokens > 0 && len(st.Slots) > 0 && sum+tokens > lim.Tokens
	return !full, earliest
}

// limitKey is one limit a call passes: its key in the bucket and its bounds.
type limitKey struct {
	key, name string
	lim       RateLimit
}

func (l RateLimits) keysFor(provider, model, keyID string) []limitKey {
	var out []limitKey
	if r, ok := l.Models[model]; ok && (r.Requests > 0 || r.Tokens > 0) {
		out = append(out, limitKey{key: "rate.model." + keyPart(provider) + "." + keyPart(model), name: "model " + model, lim: r})
	}
	if r, ok := l.Providers[provider]; ok && (r.Requests > 0 || r.Tokens > 0) {
		out = append(out, limitKey{key: "rate.key." + keyPart(provider) + "." + keyID, name: provider + "'s key", lim: r})
	}
	return out
}

// acquire takes a slot of k for a call of tokens, waiting (polling the
// key) while the window is full or a 429 blocks it. It gives up at once
// with ErrRateLimited when even the earliest slot frees after ctx's
// deadline.
func (s *shared) acquire(ctx context.Context, k limitKey, window time.Duration, tokens int64) (string, error) {
	id := nuid.Next()
	poll := min(max(window/10, 10*time.Millisecond), time.Second)
	for {
		var (
			ok, blocked bool
			next        time.Time
		)
		err := s.update(ctx, k.key, 0, func(cur []byte) ([]byte, error) {
			var st rateState
			if cur != nil {
				if err := json.Unmarshal(cur, &st); err != nil {
					st = rateState{} // a value that does not decode is replaced
				}
			}
			now := time.Now()
			if ok, next = st.admit(now, k.lim, window, tokens); !ok {
				blocked = now.Before(st.BlockedUntil)
				return nil, nil
			}
			st.Slots = append(st.Slots, rateSlot{ID: id, Until: now.Add(s.hold + window), Tokens: tokens})
			return json.Marshal(st)
		})
		if err != nil {
			return "", err
		}
		if ok {
			return id, nil
		}
		if dl, has := ctx.Deadline(); has && dl.Before(next) {
			if blocked {
				return "", fmt.Errorf("%w: the provider answered 429 with Retry-After for %s: every process waits until %s, after this call's deadline %s: give the call more time",
					ErrRateLimited, k.name, next.Format(time.RFC3339Nano), dl.Format(time.RFC3339Nano))
			}
			return "", fmt.Errorf("%w: the mesh's limit of %s (%s) is taken until %s at the earliest, after this call's deadline %s: give the call more time, or raise the limit (%s)",
				ErrRateLimited, k.name, k.lim, next.Format(time.RFC3339Nano), dl.Format(time.RFC3339Nano), EnvRateLimits)
		}
		t := time.NewTimer(min(time.Until(next), poll))
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("%w: waiting for the mesh's limit of %s (%s): %w", ErrRateLimited, k.name, k.lim, ctx.Err())
		case <-t.C:
		}
	}
}

func (r RateLimit) String() string {
	switch {
	case r.Requests > 0 && r.Tokens > 0:
		return fmt.Sprintf("%d requests and %d tokens a window", r.Requests, r.Tokens)
	case r.Tokens > 0:
		return fmt.Sprintf("%d tokens a window", r.Tokens)
	default:
		return fmt.Sprintf("%d requests a window", r.Requests)
	}
}

// release marks slot id of k answered, with the tokens the call used: it
// frees a window from now. blocked, when not zero, is when a provider's
// 429 said to come back: every process waits until then.
func (s *shared) release(ctx context.Context, k limitKey, id string, window time.Duration, tokens int64, blocked time.Time) error {
	return s.update(ctx, k.key, 0, func(cur []byte) ([]byte, error) {
		var st rateState
		if cur != nil {
			_ = json.Unmarshal(cur, &st) // a value that does not decode is replaced
		}
		now := time.Now()
		slot := rateSlot{ID: id, Until: now.Add(window), Tokens: tokens, Done: true}
		found := false
		for i := range st.Slots {
			if st.Slots[i].ID == id {
				st.Slots[i], found = slot, true
			}
		}
		if !found { // its lease ran out: it still counts for a window
			st.Slots = append(st.Slots, slot)
		}
		if blocked.After(st.BlockedUntil) {
			st.BlockedUntil = blocked
		}
		return json.Marshal(st)
	})
}

// heldSlots are the slots one attempt took, one per limit it passes.
type heldSlots struct {
	s      *shared
	keys   []limitKey
	ids    []string
	window time.Duration
	est    int64
}

// admit waits, under the caller's ctx, until the mesh's rate limits let
// one attempt of req go, and takes its slots; nil when the client shares
// no state or no limit applies. It fails with ErrRateLimited when the
// limits would not let it go before ctx's deadline.
func (c *Client) admit(ctx context.Context, req Request) (*heldSlots, error) {
	if c.shared == nil || c.shared.kv == nil {
		return nil, nil
	}
	lims, err := c.shared.rateLimits(ctx)
	if err != nil {
		return nil, err
	}
	keys := lims.keysFor(c.cfg.Provider, req.Model, c.shared.keyID)
	if len(keys) == 0 {
		return nil, nil
	}
	h := &heldSlots{s: c.shared, keys: keys, window: lims.window(), est: estimatePrompt(req)}
	for _, k := range keys {
		id, err := c.shared.acquire(ctx, k, h.window, h.est)
		if err != nil {
			h.keys = h.keys[:len(h.ids)]
			h.done(ctx, schemas.Tokens{}, nil, nil)
			return nil, err
		}
		h.ids = append(h.ids, id)
	}
	return h, nil
}

// done frees the attempt's slots a window from now, with the tokens it
// used (its estimate when it failed), and when the provider answered 429
// with Retry-After, blocks the limits for every process until then. A slot
// that cannot be marked answered stays taken until its lease ends: the
// limit errs on the safe side, and the answer stands.
func (h *heldSlots) done(ctx context.Context, tokens schemas.Tokens, err error, hn *hint) {
	if h == nil {
		return
	}
	used := int64(tokens.Prompt + tokens.Completion)
	if err != nil || used == 0 {
		used = h.est
	}
	var blocked time.Time
	if hn != nil && err != nil && statusOf(err, hn) == http.StatusTooManyRequests {
		if after, given := hn.retryAfter(time.Now()); given {
			blocked = time.Now().Add(after)
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	for i, id := range h.ids {
		_ = h.s.release(rctx, h.keys[i], id, h.window, used, blocked)
	}
}
