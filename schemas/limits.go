package schemas

import (
	"fmt"
)

// ErrLimitExceeded matches every *LimitError.
var ErrLimitExceeded = NewError(CodeLimitExceeded, "limit exceeded")

// LimitError reports a request over a limit: what was counted, its value,
// the limit, and how to get under it (or raise it).
type LimitError struct {
	Limit string // e.g. "sub-pipeline nesting depth"
	Value int
	Max   int
	Hint  string // what to do, e.g. "flatten the pipeline, or raise --max-depth"
}

func (e *LimitError) Error() string {
	s := fmt.Sprintf("%s %d is over the limit of %d", e.Limit, e.Value, e.Max)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// ErrorCode is limit_exceeded (see CodeOf).
func (e *LimitError) ErrorCode() string { return CodeLimitExceeded }

// Is matches ErrLimitExceeded and a *ResultError of code limit_exceeded.
func (e *LimitError) Is(target error) bool {
	if target == ErrLimitExceeded {
		return true
	}
	t, ok := target.(*ResultError)
	return ok && t.Code == CodeLimitExceeded
}
