package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// Error codes of the JetStream API (jetstream.APIError.ErrorCode, the
// server's errors.json) the mesh tells apart. The HTTP-like status (Code)
// says little: a stream at its MaxMsgs answers 503, as a cluster without a
// leader does, but only one of them passes.
const (
	jsAccountResourcesExceeded = 10002 // the account is over its JetStream limits
	jsClusterNotAvailable      = 10008 // JetStream system temporarily unavailable
	jsClusterNotLeader         = 10009 // the cluster cannot handle the request (no leader yet)
	jsInsufficientResources    = 10023 // the server is over its JetStream limits
	jsMemoryResourcesExceeded  = 10028 // insufficient memory resources available
	jsStorageResourcesExceeded = 10047 // insufficient storage resources available
	jsStreamStoreFailed        = 10077 // the stream could not store the message; the description says why
	jsStreamOffline            = 10118 // the stream is offline (restarting, moving)
	jsLastSeqNotReady          = 10163 // expected last sequence per subject temporarily unavailable
	jsDuplicateInProcess       = 10158 // a message with this id is being stored: a try again finds it stored (a duplicate) or stores it
	jsNotEnabledForAccount     = 10039 // JetStream not enabled for the account (yet: a server starting)
	jsNotEnabled               = 10076 // JetStream not enabled (yet: a server starting)
)

// Descriptions of jsStreamStoreFailed for a stream at one of its limits
// with the discard policy new (the server's ErrMaxMsgs, ErrMaxBytes,
// ErrMaxMsgsPerSubject), and the limit each names.
var storeLimits = []struct{ description, limit string }{
	{"maximum messages per subject exceeded", "MaxMsgsPerSubject"},
	{"maximum messages exceeded", "MaxMsgs"},
	{"maximum bytes exceeded", "MaxBytes"},
}

// BacklogError is the error of a publish that a stream refused because it,
// the server or the account is at a limit: the stream's consumers are not
// keeping up, and trying again at once only adds to the load. It matches
// ErrBacklogFull and a schemas.ResultError with code backlog_full, and
// unwraps to the server's *jetstream.APIError.
type BacklogError struct {
	Stream string // the stream that refused the message ("" when unknown)
	Limit  string // the limit it is at, with its value: "MaxMsgs 5", "the account's storage limit"
	Held   string // what the stream holds, when known: "5 messages, 1.2 KiB"
	Err    *jetstream.APIError
}

func (e *BacklogError) Error() string {
	stream := "the stream"
	if e.Stream != "" {
		stream = "stream " + e.Stream
	}
	held := ""
	if e.Held != "" {
		held = ", holding " + e.Held
	}
	return fmt.Sprintf("%s: %s refused the message: it is at %s%s (%s); its consumers are not keeping up: send again later, or raise the limit",
		schemas.CodeBacklogFull, stream, e.Limit, held, e.Err.Description)
}

// Unwrap makes the error match ErrBacklogFull, the backlog_full code and
// the server's error.
func (e *BacklogError) Unwrap() []error {
	return []error{ErrBacklogFull, &schemas.ResultError{Code: schemas.CodeBacklogFull, Message: e.Error()}, e.Err}
}

// Backlog reports whether err is a JetStream refusal of a stream, server
// or account at a limit (see BacklogError), by its error code.
func Backlog(err error) bool {
	if errors.Is(err, ErrBacklogFull) {
		return true
	}
	api, ok := errors.AsType[*jetstream.APIError](err)
	if !ok {
		return false
	}
	_, full := backlogLimit(api)
	return full
}

// backlogLimit names the limit an API error says was reached.
func backlogLimit(api *jetstream.APIError) (string, bool) {
	switch api.ErrorCode {
	case jsAccountResourcesExceeded:
		return "the account's JetStream limits", true
	case jsInsufficientResources:
		return "the server's JetStream limits", true
	case jsMemoryResourcesExceeded:
		return "the memory JetStream may use", true
	case jsStorageResourcesExceeded:
		return "the storage JetStream may use", true
	case jsStreamStoreFailed:
		for _, l := range storeLimits {
			if strings.Contains(api.Description, l.description) {
				return l.limit, true
			}
		}
	}
	return "", false
}

// transientAPI reports a JetStream API error that says only that the
// server cannot answer now: no leader, an offline stream, JetStream not
// (yet) enabled, a store being closed, or a bare 503 with no error code
// (no responders).
func transientAPI(api *jetstream.APIError) bool {
	switch api.ErrorCode {
	case 0:
		return api.Code == 503
	case jsClusterNotAvailable, jsClusterNotLeader, jsStreamOffline, jsLastSeqNotReady, jsDuplicateInProcess, jsNotEnabledForAccount, jsNotEnabled:
		return true
	case jsStreamStoreFailed:
		// A stream at a limit or a message over the size limit fails the
		// same way each time; a store that is closing does not.
		_, full := backlogLimit(api)
		return !full && !strings.Contains(api.Description, "message size exceeds maximum")
	}
	return false
}

// describeWithin bounds the look-up of the stream a backlog error names.
const describeWithin = 2 * time.Second

// backlogError turns err, a publish to subject that a stream at a limit
// refused, into a *BacklogError naming the stream and the limit with its
// value, as far as the server tells them; any other err is returned as is.
func backlogError(ctx context.Context, js jetstream.JetStream, subject string, err error) error {
	api, ok := errors.AsType[*jetstream.APIError](err)
	if !ok {
		return err
	}
	limit, full := backlogLimit(api)
	if !full {
		return err
	}
	be := &BacklogError{Limit: limit, Err: api}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), describeWithin)
	defer cancel()
	name, serr := js.StreamNameBySubject(ctx, subject)
	if serr != nil {
		return be
	}
	be.Stream = name
	s, serr := js.Stream(ctx, name)
	if serr != nil {
		return be
	}
	info := s.CachedInfo()
	cfg, st := info.Config, info.State
	switch limit {
	case "MaxMsgs":
		be.Limit = fmt.Sprintf("MaxMsgs %d", cfg.MaxMsgs)
	case "MaxBytes":
		be.Limit = fmt.Sprintf("MaxBytes %d", cfg.MaxBytes)
	case "MaxMsgsPerSubject":
		be.Limit = fmt.Sprintf("MaxMsgsPerSubject %d on %s", cfg.MaxMsgsPerSubject, subject)
	}
	be.Held = fmt.Sprintf("%d messages, %d bytes", st.Msgs, st.Bytes)
	return be
}
