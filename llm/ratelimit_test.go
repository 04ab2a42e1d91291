package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
)

// instance is one process of the mesh: its own NATS connection, its own
// bucket handle and its own client.
func instance(t *testing.T, srv *bustest.Server, cfg llm.Config) *llm.Client {
	t.Helper()
	js := srv.JetStream(t)
	kv, err := js.KeyValue(context.Background(), srv.Names().LLMBucket())
	if err != nil {
		t.Fatal(err)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c.WithShared(js, kv)
}

// Ten instances (as many as 3 agent instances and 2 orchestrator replicas
// with room to spare), each calling at once, share a limit of 3 requests a
// window: the provider never sees more than 3 in any window, and every
// call waits its turn and succeeds instead of failing with a 429.
func TestSharedRateLimitHoldsAcrossInstances(t *testing.T) {
	const (
		instances = 10
		calls     = 2 // each
		limit     = 3
		window    = 300 * time.Millisecond
	)
	srv := bustest.Start(t)
	res := srv.Provision(t)
	prov := llmtest.NewWindowed(t, limit, window)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := llm.DeclareRateLimits(ctx, res.LLM, llm.RateLimits{
		Window: llm.Duration(window),
		Models: map[string]llm.RateLimit{"test-model": {Requests: limit}},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := prov.Config()
	cfg.MaxRetries = -1 // a 429 fails the call: the limit alone must keep them away
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range instances {
		c := instance(t, srv, cfg)
		for range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := c.Chat(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("calls failed instead of waiting: %v", err)
	}
	received, refused, most := prov.Counts()
	if received != instances*calls || refused != 0 || most > limit {
		t.Fatalf("the provider saw %d requests (want %d), refused %d, at most %d in a window of %s (limit %d)",
			received, instances*calls, refused, most, window, limit)
	}
}

// A provider's 429 with Retry-After blocks the model for every process: a
// second instance's call is not sent while the block lasts, and a call
// whose deadline comes first fails at once with ErrRateLimited.
func TestRetryAfterBlocksEveryInstance(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	prov := llmtest.New(t, llmtest.RateLimited("30"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := llm.DeclareRateLimits(ctx, res.LLM, llm.RateLimits{Models: map[string]llm.RateLimit{"test-model": {Requests: 100}}}); err != nil {
		t.Fatal(err)
	}
	cfg := prov.Config()
	cfg.MaxRetries = -1
	a, b := instance(t, srv, cfg), instance(t, srv, cfg)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hi"}}
	if _, _, err := a.Chat(ctx, llm.Request{Messages: msgs}); !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("first call: %v, want the provider's 429", err)
	}
	e, err := res.LLM.Get(ctx, "rate.model.openai.test-model")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		BlockedUntil time.Time `json:"blocked_until"`
	}
	if err := json.Unmarshal(e.Value(), &st); err != nil || time.Until(st.BlockedUntil) < 20*time.Second {
		t.Fatalf("shared state %s: want blocked for about 30s (%v)", e.Value(), err)
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	defer cancelShort()
	_, _, err = b.Chat(short, llm.Request{Messages: msgs})
	if !errors.Is(err, llm.ErrRateLimited) || short.Err() != nil {
		t.Fatalf("second instance: %v (ctx %v); want ErrRateLimited at once, naming the limit", err, short.Err())
	}
	if n := len(prov.Requests()); n != 1 {
		t.Fatalf("the provider got %d requests; the blocked one must not be sent", n)
	}
	t.Log(err)
}

// Bad declarations are refused with every problem named.
func TestParseRateLimitsNamesEachProblem(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"models":{"m":{"requests":-1}}}`, `model "m": requests -1`},
		{`{"providers":{"google":{"requests":1}}}`, `provider "google" is not openai, anthropic or gemini`},
		{`{"models":{"m":{"requests":60000}}}`, `requests 60000 a window is over the most the mesh counts, 2000`},
		{`{"window":"soon"}`, `window "soon" is not a positive duration`},
		{`{"modles":{}}`, `unknown field "modles"`},
	} {
		_, err := llm.ParseRateLimits(tc.in)
		if !errors.Is(err, llm.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRateLimits(%s) = %v; want ErrInvalidConfig saying %q", tc.in, err, tc.want)
		}
	}
}
