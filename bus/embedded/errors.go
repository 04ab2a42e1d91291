package embedded

import "errors"

var (
	// ErrPortInUse reports that the embedded server could not listen on its port.
	ErrPortInUse = errors.New("embedded: port in use")

	// ErrInvalidOption reports a server option that cannot work (a cluster
	// node without a name of its own, a route that is no URL).
	ErrInvalidOption = errors.New("embedded: invalid server option")

	// ErrServerNotReady reports that the embedded server did not become ready.
	ErrServerNotReady = errors.New("embedded: NATS server not ready")
)
