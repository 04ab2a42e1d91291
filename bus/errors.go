package bus

import (
	"errors"

	"github.com/agentmesh/agentmesh/schemas"
)

var (
	// ErrInvalidName reports a prefix, agent name or id that cannot be used as
	// a NATS subject token, JetStream durable name or KV key.
	ErrInvalidName = schemas.NewError(schemas.CodeInvalidID, "bus: invalid name")

	// ErrNoServer reports that no NATS server answered at the configured URL.
	ErrNoServer = errors.New("bus: no NATS server")

	// ErrAuth reports that the NATS server refused the credentials.
	ErrAuth = errors.New("bus: NATS authorization failed")

	// ErrConflict reports an existing stream, bucket or object store whose
	// configuration conflicts with the one the mesh needs.
	ErrConflict = errors.New("bus: conflicting JetStream configuration")

	// ErrMalformedEvent reports a message that is not a readable CloudEvent.
	ErrMalformedEvent = schemas.NewError(schemas.CodeMalformedEvent, "bus: malformed CloudEvent")

	// ErrMissingAttribute reports a CloudEvent without a required attribute.
	ErrMissingAttribute = errors.New("bus: missing CloudEvent attribute")

	// ErrSpecVersion reports a CloudEvent whose specversion is not 1.0.
	ErrSpecVersion = errors.New("bus: unsupported CloudEvents specversion")

	// ErrInvalidAttribute reports a CloudEvent attribute with a bad value or name.
	ErrInvalidAttribute = schemas.NewError(schemas.CodeMalformedEvent, "bus: invalid CloudEvent attribute")

	// ErrInvalidData reports event data that does not decode into the wanted
	// type or fails its schema.
	ErrInvalidData = schemas.NewError(schemas.CodeMalformedEvent, "bus: invalid event data")
	// ErrNoReplySubject reports a refused request none of whose ids can be
	// a subject token, so no answer can be published where its sender
	// looks (see ReplyToken); it is dead-lettered instead.
	ErrNoReplySubject = errors.New("bus: the request names no id usable as a reply subject")

	// ErrBacklogFull reports a publish refused because the stream, the
	// server or the account is at a limit (see BacklogError): the request
	// was not stored, and trying again at once will not store it.
	ErrBacklogFull = errors.New("bus: backlog full")

	// ErrDuplicate reports a publish (see PublishNew) whose Nats-Msg-Id
	// another publish stored first, within the stream's duplicate window:
	// the stream kept the other message and dropped this one.
	ErrDuplicate = errors.New("bus: duplicate message id")
)
