package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// defaultDrainTimeout bounds the drain of an agent or orchestrator after
// SIGTERM: below up's 20s grace and Compose's 30s stop_grace_period.
const defaultDrainTimeout = 15 * time.Second

func drainFlag(f *pflag.FlagSet, d *time.Duration) {
	f.DurationVar(d, "drain-timeout", defaultDrainTimeout,
		"after SIGTERM, how long in-flight work may take to finish before the process exits anyway (its unacknowledged messages are redelivered)")
}

// awaitDrain returns what the process's run loop returns on errc; once ctx
// has ended it waits at most timeout for it. A drain can outlast that when
// the NATS server is gone: acknowledgements, the registry update and the
// final flush then wait on a connection that is not coming back.
func (a *app) awaitDrain(ctx context.Context, what string, timeout time.Duration, errc <-chan error) error {
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-errc:
		return err
	case <-time.After(timeout):
		return exitError{code: 1, msg: fmt.Sprintf("%s did not finish draining within %s (--drain-timeout; is the NATS server reachable?); exiting: its unfinished messages will be redelivered", what, timeout)}
	}
}
