package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/schemas"
)

// Codes of the HTTP API's own refusals; the others are the mesh's
// (schemas.Code*, docs/errors.md).
const (
	CodeUnauthorized = "unauthorized" // no bearer token, or one the gateway does not know
	CodeForbidden    = "forbidden"    // the token's credentials may not do this on a secure mesh
	CodeCrossOrigin  = "cross_origin" // a browser's state-changing request from a page of another site
	CodeForeignHost  = "foreign_host" // a request to a loopback gateway naming another Host (DNS rebinding)
	CodeRunExists    = "run_exists"   // POST /api/pipelines?run_id= names a run that exists
)

var (
	// ErrUnauthorized reports a request without a known bearer token.
	ErrUnauthorized = errors.New("gateway: unauthorized")
	// ErrForbidden reports a request the token's identity may not make.
	ErrForbidden = errors.New("gateway: forbidden")
	// ErrCrossOrigin reports a browser's request from another site.
	ErrCrossOrigin = errors.New("gateway: cross-origin request")
	// ErrForeignHost reports a request naming a Host the gateway does not
	// serve.
	ErrForeignHost = errors.New("gateway: foreign Host")
	// ErrRunExists reports a submission whose run id is taken.
	ErrRunExists = errors.New("gateway: run exists")
	// ErrNoConnection reports New called without a NATS connection.
	ErrNoConnection = errors.New("gateway: no NATS connection")
	// ErrBadToken reports a bearer token option that cannot be used.
	ErrBadToken = errors.New("gateway: bad token")
	// ErrConfig reports a gateway made without what it needs (see New).
	ErrConfig = errors.New("gateway: configuration")
)

// apiError is an error answer: a mesh code, an HTTP status and a message
// that says what was wrong and what to do.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// Unwrap lets errors.Is match the gateway's own refusals by sentinel.
func (e *apiError) Unwrap() error {
	switch e.Code {
	case CodeUnauthorized:
		return ErrUnauthorized
	case CodeForbidden:
		return ErrForbidden
	case CodeCrossOrigin:
		return ErrCrossOrigin
	case CodeForeignHost:
		return ErrForeignHost
	case CodeRunExists:
		return ErrRunExists
	}
	return nil
}

// fail builds an apiError with the status that fits code.
func fail(code, format string, args ...any) *apiError {
	return &apiError{Status: statusOf(code), Code: code, Message: fmt.Sprintf(format, args...)}
}

// statusOf maps a mesh error code to the HTTP status that fits it. A code
// the gateway does not know is a failure of the mesh (502).
func statusOf(code string) int {
	switch code {
	case schemas.CodeInvalidInput, schemas.CodeInvalidParams, schemas.CodeMalformedEvent,
		schemas.CodeInvalidRequest, schemas.CodeInvalidID, schemas.CodeInvalidPipeline, schemas.CodeInvalidContract:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden, CodeCrossOrigin, CodeForeignHost:
		return http.StatusForbidden
	case schemas.CodeNotFound, schemas.CodeUnknownAgent:
		return http.StatusNotFound
	case schemas.CodeNotWaiting, schemas.CodeCancelled, schemas.CodeRejected, CodeRunExists:
		return http.StatusConflict
	case schemas.CodeTooLarge, schemas.CodeLimitExceeded:
		return http.StatusRequestEntityTooLarge
	case schemas.CodeBacklogFull:
		return http.StatusServiceUnavailable // with Retry-After (writeError)
	case schemas.CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway // internal, unavailable, agent_error, retries_exhausted, step_failed, corrupt_state, malformed_result
}

// meshError turns an error of the mesh's client code into an apiError:
// missing keys are not_found, deadlines timeout, permission violations
// forbidden, anything else a failure of the mesh (502).
func meshError(what string, err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, stateview.ErrNotFound), errors.Is(err, jetstream.ErrKeyNotFound),
		errors.Is(err, jetstream.ErrObjectNotFound):
		return fail(schemas.CodeNotFound, "%s: not found", what)
	case errors.Is(err, client.ErrUnknownConversation):
		return fail(schemas.CodeNotFound, "%s: %v", what, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fail(schemas.CodeTimeout, "%s: the mesh did not answer in time: %v", what, err)
	case errors.Is(err, bus.ErrBacklogFull):
		return fail(schemas.CodeBacklogFull, "%s: %v", what, err)
	case errors.Is(err, nats.ErrPermissionViolation):
		return fail(CodeForbidden, "%s: the gateway's credentials may not do this: %v", what, err)
	}
	if c := schemas.CodeOf(err); c != schemas.CodeInternal {
		return &apiError{Status: statusOf(c), Code: c, Message: fmt.Sprintf("%s: %v", what, err)}
	}
	return &apiError{Status: http.StatusBadGateway, Code: schemas.CodeInternal, Message: fmt.Sprintf("%s: %v", what, err)}
}
