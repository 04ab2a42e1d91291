package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"3", 3 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"3600", maxRetryAfter, true},
		{"soon", 0, false},
		{now.Add(2 * time.Second).Format(http.TimeFormat), 2 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	} {
		if got, ok := parseRetryAfter(tc.in, now); got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	if got := backoff(0, 7*time.Second, true); got != 7*time.Second {
		t.Errorf("Retry-After must win: %v", got)
	}
	for attempt := range 40 {
		d := backoff(attempt, 0, false)
		if d < baseBackoff/2 || d > maxBackoff {
			t.Errorf("backoff(%d) = %v out of [%v, %v]", attempt, d, baseBackoff/2, maxBackoff)
		}
	}
}

// The wait before a retry is the endpoint's Retry-After, seen through go-openai.
func TestRetryAfterIsHonoured(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"slow down"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "ok"}}},
		})
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	text, _, err := c.Complete(context.Background(), "", "hi")
	if err != nil || text != "ok" {
		t.Fatalf("Complete = %q, %v", text, err)
	}
	if len(waits) != 1 || waits[0] != 7*time.Second {
		t.Fatalf("waits = %v, want [7s] from Retry-After", waits)
	}
}

func TestPriceByPrefix(t *testing.T) {
	cfg, err := Config{APIKey: "k", Prices: map[string]Price{"gpt-4o-mini": {Prompt: 9}}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := cfg.price("gpt-4o-mini-2024-07-18"); !ok || p.Prompt != 9 {
		t.Errorf("dated model priced %+v %v, want the user's gpt-4o-mini price", p, ok)
	}
	if p, ok := cfg.price("gpt-4o-2024-08-06"); !ok || p.Prompt != 2.5 {
		t.Errorf("gpt-4o dated = %+v %v", p, ok)
	}
	if _, ok := cfg.price("llama3.2"); ok {
		t.Error("an unknown local model must have no price")
	}
}
