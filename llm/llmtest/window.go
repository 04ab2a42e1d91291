package llmtest

import (
	"sync"
	"testing"
	"time"
)

// Windowed is a scripted OpenAI-compatible provider with a rate limit: it
// answers "ok" to at most Limit requests in any Window, counted by when
// each arrived, and 429 to any more, as a provider does. Tests of the
// mesh's shared rate limits read its counts, not times.
type Windowed struct {
	*Server
	Window time.Duration
	Limit  int

	mu       sync.Mutex
	arrivals []time.Time
	refused  int
	most     int
}

// NewWindowed starts a provider that allows limit requests in any window.
func NewWindowed(t testing.TB, limit int, window time.Duration) *Windowed {
	t.Helper()
	w := &Windowed{Server: New(t), Window: window, Limit: limit}
	w.Handle(func(req Request) Reply {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.arrivals = append(w.arrivals, req.At)
		n := 0
		for _, at := range w.arrivals {
			if !at.After(req.At) && req.At.Sub(at) < w.Window {
				n++
			}
		}
		w.most = max(w.most, n)
		if n > w.Limit {
			w.refused++
			return RateLimited("")
		}
		return Answer("ok")
	})
	return w
}

// Counts returns the requests received, those refused with 429 and the
// most received in one window.
func (w *Windowed) Counts() (received, refused, most int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.arrivals), w.refused, w.most
}
