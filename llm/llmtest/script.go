package llmtest

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// script is what every scripted server shares: the replies in order, the
// handler that answers once they are spent, and the requests received. R is
// the server's recorded request type.
type script[R any] struct {
	mu         sync.Mutex
	replies    []Reply
	handler    func(R) Reply
	requests   []R
	unexpected []string
	ids        atomic.Int64
}

// Enqueue appends replies to the script.
func (s *script[R]) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Handle sets the function that answers once the script is empty. It may be
// called concurrently, so it must be safe for that.
func (s *script[R]) Handle(fn func(R) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = fn
}

// Requests returns every request received so far, in order.
func (s *script[R]) Requests() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]R(nil), s.requests...)
}

// Remaining is the number of scripted replies not yet sent.
func (s *script[R]) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

// next records req and picks its reply: the script's next, else the
// handler's; ok is false when there is neither.
func (s *script[R]) next(req R) (Reply, bool) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if len(s.replies) > 0 {
		r := s.replies[0]
		s.replies = s.replies[1:]
		s.mu.Unlock()
		return r, true
	}
	handler := s.handler
	s.mu.Unlock()
	if handler == nil {
		return Reply{}, false
	}
	return handler(req), true
}

// fail records an unexpected request (the test fails at cleanup) and
// answers it with a 500 in the server's error format.
func (s *script[R]) fail(w http.ResponseWriter, msg string, writeErr func(http.ResponseWriter, int, string)) {
	s.mu.Lock()
	s.unexpected = append(s.unexpected, msg)
	s.mu.Unlock()
	writeErr(w, http.StatusInternalServerError, "llmtest: "+msg)
}

// report fails t with every unexpected request.
func (s *script[R]) report(t testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.unexpected {
		t.Errorf("llmtest: %s", u)
	}
}
