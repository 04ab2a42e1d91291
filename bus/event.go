package bus

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// SpecVersion is the only CloudEvents version the mesh speaks.
const SpecVersion = "1.0"

// ContentTypeJSON is the data content type of every event the mesh emits.
const ContentTypeJSON = "application/json"

// Event types of the wire contract.
const (
	TypeAgentAnnounced     = "io.agentmesh.agent.announced"
	TypeAgentDeparted      = "io.agentmesh.agent.departed"
	TypeAgentRefused       = "io.agentmesh.agent.refused"
	TypeTaskRequested      = "io.agentmesh.task.requested"
	TypeTaskCompleted      = "io.agentmesh.task.completed"
	TypeTaskFailed         = "io.agentmesh.task.failed"
	TypeTaskProgress       = "io.agentmesh.task.progress"
	TypeChatRequested      = "io.agentmesh.chat.requested"
	TypeChatResponded      = "io.agentmesh.chat.responded"
	TypePipelineSubmitted  = "io.agentmesh.pipeline.submitted"
	TypePipelineStepPrefix = "io.agentmesh.pipeline.step."
	// TypeForkRequested starts a run from an earlier run's step
	// (schemas.ForkRequest), on the pipeline submit subject.
	TypeForkRequested     = "io.agentmesh.pipeline.fork.requested"
	TypePipelineCompleted = "io.agentmesh.pipeline.completed"
	// The step events on mesh.events.<run>.pipeline.
	TypeStepStarted   = TypePipelineStepPrefix + "started"
	TypeStepCompleted = TypePipelineStepPrefix + "completed"
	TypeStepFailed    = TypePipelineStepPrefix + "failed"
	TypeStepSkipped   = TypePipelineStepPrefix + "skipped"
	// TypeStepWaiting: an approval or input step waits for a person.
	TypeStepWaiting = TypePipelineStepPrefix + "waiting"
	// TypeResolveRequested answers a step that waits, on
	// mesh.pipeline.resolve; TypeResolveRefused, on
	// mesh.events.<run>.pipeline, says why one changed nothing.
	TypeResolveRequested = "io.agentmesh.pipeline.resolve.requested"
	TypeResolveRefused   = "io.agentmesh.pipeline.resolve.refused"
	// TypeChatProgress is a chat turn's progress ("thinking", "calling
	// ImageSearch", "ImageSearch returned 12 images") on
	// mesh.events.<conversation>.chat, next to the final chat.responded.
	// Its data has the shape of io.agentmesh.task.progress.
	TypeChatProgress = "io.agentmesh.chat.progress"
)

// Extension attributes carried on tasks and results.
const (
	ExtConversationID = "conversationid"
	ExtRunID          = "runid"
	ExtStepID         = "stepid"
	ExtTaskID         = "taskid" // on results: the task event's id
	ExtReplyTo        = "replyto"
	ExtDeadline       = "deadline" // RFC 3339; later hops inherit it
	ExtTraceParent    = "traceparent"
	// ExtCallDepth is how many agent-to-agent calls deep a task is (absent:
	// 0, a task nobody's Execute sent); ExtMaxCallDepth is the deepest the
	// chain may go, set by its first call and carried down unchanged.
	ExtCallDepth    = "calldepth"
	ExtMaxCallDepth = "maxcalldepth"
	// ExtOwner is the client that owns the conversation or run a task
	// works for (or, on a client's direct call, the client itself): the
	// agent sends the task's progress and text on that client's subjects
	// (Names.ForClient(owner).Events, .Deltas), the only ones it may read on
	// a secure mesh. Absent: an unowned one. Later hops inherit it.
	ExtOwner = "owner"
)

const maxExtNameLen = 20

// Event is a CloudEvents 1.0 event. Data holds the raw data bytes (JSON when
// DataContentType is application/json); a decoded event's Data may share
// memory with the message it came from.
type Event struct {
	ID              string
	Source          string
	Type            string
	Subject         string
	SpecVersion     string
	DataContentType string
	DataSchema      string
	Time            time.Time
	Extensions      map[string]string
	Data            []byte
}

// NewEvent returns an event with a fresh UUID, the current UTC time,
// specversion 1.0 and data as JSON: []byte and json.RawMessage are taken as
// JSON bytes as they are, nil means no data, anything else is marshalled.
func NewEvent(typ, source string, data any) (Event, error) {
	e := Event{
		ID:          NewID(),
		Source:      source,
		Type:        typ,
		SpecVersion: SpecVersion,
		Time:        time.Now().UTC(),
	}
	switch d := data.(type) {
	case nil:
		return e, nil
	case []byte:
		e.Data = d
	case json.RawMessage:
		e.Data = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return e, fmt.Errorf("%w: %s event data %T does not marshal to JSON: %w", ErrInvalidData, typ, data, err)
		}
		e.Data = b
	}
	e.DataContentType = ContentTypeJSON
	return e, nil
}

// NewID returns a random (version 4) UUID for an event id. Its bits come
// from the runtime's ChaCha8 generator, seeded by the system: unique without
// a system call per event.
func NewID() string {
	var b uuid.UUID
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return b.String()
}

// Ext returns the value of an extension attribute, "" when absent.
func (e Event) Ext(name string) string { return e.Extensions[name] }

// SetExt sets an extension attribute; an empty value removes it.
func (e *Event) SetExt(name, value string) {
	if value == "" {
		delete(e.Extensions, name)
		return
	}
	if e.Extensions == nil {
		e.Extensions = make(map[string]string, 4)
	}
	e.Extensions[name] = value
}

// Deadline returns the deadline extension. ok is false when there is none; an
// unparsable value is an error wrapping ErrInvalidAttribute.
func (e Event) Deadline() (deadline time.Time, ok bool, err error) {
	v := e.Extensions[ExtDeadline]
	if v == "" {
		return time.Time{}, false, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%w: deadline %q of event %s is not an RFC 3339 time such as 2026-01-02T15:04:05Z", ErrInvalidAttribute, v, e.ID)
	}
	return t, true, nil
}

// Validate reports every problem with the event's attributes at once: the
// required id, source, type and specversion ("1.0"), and extension names
// (lowercase a-z and 0-9, at most 20 characters, not a core attribute name).
func (e Event) Validate() error {
	var errs []error
	if e.ID == "" {
		errs = append(errs, missing("id"))
	}
	if e.Source == "" {
		errs = append(errs, missing("source"))
	}
	if e.Type == "" {
		errs = append(errs, missing("type"))
	}
	switch e.SpecVersion {
	case SpecVersion:
	case "":
		errs = append(errs, missing("specversion"))
	default:
		errs = append(errs, fmt.Errorf("%w: specversion %q: the mesh speaks CloudEvents 1.0 only, send specversion \"1.0\"", ErrSpecVersion, e.SpecVersion))
	}
	for _, a := range [...]struct{ name, v string }{{"id", e.ID}, {"source", e.Source}, {"type", e.Type},
		{"subject", e.Subject}, {"datacontenttype", e.DataContentType}, {"dataschema", e.DataSchema}} {
		if !utf8.ValidString(a.v) {
			errs = append(errs, notUTF8(a.name, a.v))
		}
	}
	for name, v := range e.Extensions {
		if err := validateExtName(name); err != nil {
			errs = append(errs, err)
		}
		if !utf8.ValidString(v) {
			errs = append(errs, notUTF8("extension "+name, v))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

func notUTF8(attr, v string) error {
	return fmt.Errorf("%w: %s %q is not valid UTF-8: attribute values are Unicode strings", ErrInvalidAttribute, attr, clip(v))
}

func missing(attr string) error {
	return fmt.Errorf("%w: %s: every CloudEvent needs id, source, type and specversion (binary mode: ce-%s header; structured mode: %q field)", ErrMissingAttribute, attr, attr, attr)
}

func validateExtName(name string) error {
	if name == "" || len(name) > maxExtNameLen {
		return fmt.Errorf("%w: extension name %q: use 1 to %d lowercase letters and digits", ErrInvalidAttribute, clip(name), maxExtNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			continue
		}
		return fmt.Errorf("%w: extension name %q: use only lowercase letters a-z and digits 0-9", ErrInvalidAttribute, name)
	}
	if isCoreAttr(name) {
		return fmt.Errorf("%w: extension name %q is a core CloudEvents attribute: set the field of Event instead", ErrInvalidAttribute, name)
	}
	return nil
}

func isCoreAttr(name string) bool {
	switch name {
	case "id", "source", "type", "subject", "specversion", "time", "datacontenttype", "dataschema", "data":
		return true
	}
	return false
}

// DataAs unmarshals the JSON data into v. *[]byte and *string receive the raw
// bytes. A failure wraps ErrInvalidData and the JSON error, naming the event
// type and the target type.
func (e Event) DataAs(v any) error {
	switch p := v.(type) {
	case *[]byte:
		*p = append((*p)[:0], e.Data...)
		return nil
	case *string:
		*p = string(e.Data)
		return nil
	case *json.RawMessage:
		*p = append((*p)[:0], e.Data...)
		return nil
	}
	if len(e.Data) == 0 {
		return fmt.Errorf("%w: %s event %s has no data to decode into %T: send JSON data", ErrInvalidData, e.Type, e.ID, v)
	}
	if e.DataContentType != "" && !isJSONContentType(e.DataContentType) {
		return fmt.Errorf("%w: %s event %s has data of content type %q, not JSON: cannot decode into %T", ErrInvalidData, e.Type, e.ID, e.DataContentType, v)
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("%w: %s event %s data does not decode into %T: %w", ErrInvalidData, e.Type, e.ID, v, err)
	}
	return nil
}

// DecodeData checks the data with validate (a JSON Schema check, for one)
// when it is not nil, then unmarshals it into v. A failure wraps
// ErrInvalidData and names the event type.
func DecodeData(e Event, v any, validate func([]byte) error) error {
	if validate != nil {
		if err := validate(e.Data); err != nil {
			return fmt.Errorf("%w: %s event %s data fails its schema: %w", ErrInvalidData, e.Type, e.ID, err)
		}
	}
	return e.DataAs(v)
}

// isJSONContentType reports application/json, text/json and any +json type,
// ignoring parameters such as charset.
func isJSONContentType(ct string) bool {
	if i := indexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = trimSpace(ct)
	if len(ct) >= 5 && equalFoldASCII(ct[len(ct)-5:], "+json") {
		return true
	}
	return equalFoldASCII(ct, "application/json") || equalFoldASCII(ct, "text/json")
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
