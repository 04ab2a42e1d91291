package agents

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidOption reports a bad Option value.
	ErrInvalidOption = errors.New("agents: invalid option")
	// ErrInvalidAgent reports an agent whose contract fails validation.
	ErrInvalidAgent = errors.New("agents: invalid agent")
	// ErrAlreadyRunning reports a second call of Runtime.Run.
	ErrAlreadyRunning = errors.New("agents: runtime already running")
	// ErrCancelled is the cause of a task's context when a cancel request
	// stopped it.
	ErrCancelled = errors.New("agents: task cancelled by request")
	// ErrDeadline is the cause of a task's context when it passed its deadline.
	ErrDeadline = errors.New("agents: task passed its deadline")
)

func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// retryable marks an error as worth another delivery.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// Retryable marks err so that the runtime redelivers the task with back-off
// instead of failing it. Retryable(nil) is nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryable{err: err}
}

// IsRetryable reports whether err, or an error it wraps, was marked with
// Retryable.
func IsRetryable(err error) bool {
	var r retryable
	return errors.As(err, &r)
}
