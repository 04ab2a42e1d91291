package llm

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// go-openai turns a failed HTTP response into an error and drops its
// headers, so Retry-After is captured on the way through: each attempt puts a
// *hint in its request context and hintDoer, the client's HTTP doer, fills it
// from the response. Concurrent calls have their own hints; the shared
// http.Client is never touched.

const (
	baseBackoff   = 500 * time.Millisecond
	maxBackoff    = 10 * time.Second
	maxRetryAfter = 60 * time.Second
)

type hintKey struct{}

// hint is what the transport saw of one attempt's response.
type hint struct {
	mu     sync.Mutex
	status int
	after  string
}

func (h *hint) statusCode() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status
}

// retryAfter parses Retry-After (seconds or an HTTP date); ok is false when
// the header is absent or unreadable.
func (h *hint) retryAfter(now time.Time) (time.Duration, bool) {
	h.mu.Lock()
	v := h.after
	h.mu.Unlock()
	return parseRetryAfter(v, now)
}

func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return min(time.Duration(secs*float64(time.Second)), maxRetryAfter), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}

// hintDoer records each response's status and Retry-After into the hint
// carried by the request's context.
type hintDoer struct{ next *http.Client }

func (d hintDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.next.Do(req)
	if resp != nil {
		if h, ok := req.Context().Value(hintKey{}).(*hint); ok {
			h.mu.Lock()
			h.status, h.after = resp.StatusCode, resp.Header.Get("Retry-After")
			h.mu.Unlock()
		}
	}
	return resp, err
}

// retryable reports whether an attempt that failed with status (0: no
// response) is worth another try.
func retryable(status int, err error, timedOut bool) bool {
	switch {
	case status == http.StatusTooManyRequests, status >= 500:
		return true
	case status == 0:
		return err != nil // connection refused, reset, attempt timeout
	default:
		return timedOut
	}
}

// backoff is the wait before retry attempt+1: Retry-After when the endpoint
// gave one, else exponential with jitter.
func backoff(attempt int, retryAfter time.Duration, given bool) time.Duration {
	if given {
		return retryAfter
	}
	d := baseBackoff << attempt
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
