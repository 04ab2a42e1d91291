package bus

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Header names of the binary content mode. Encode writes these exact keys;
// Decode also accepts them in any letter case.
const (
	HeaderContentType = "Content-Type"
	headerPrefix      = "ce-"
	hSpecVersion      = "ce-specversion"
	hID               = "ce-id"
	hSource           = "ce-source"
	hType             = "ce-type"
	hTime             = "ce-time"
	hSubject          = "ce-subject"
	hDataSchema       = "ce-dataschema"
)

// ContentTypeStructured is the Content-Type of a structured-mode message.
const ContentTypeStructured = "application/cloudevents+json"

// Encode returns a binary-mode message: every attribute is a ce-<name> header
// whose value is percent-encoded as the CloudEvents NATS binding asks (see
// EncodeHeaderValue), the data content type is the Content-Type header and
// the body is e.Data (shared, not copied). An empty SpecVersion is taken as 1.0. An event that
// fails Validate, or whose attribute values hold CR or LF (which headers
// cannot carry: use EncodeStructured), is an error.
func Encode(subject string, e Event) (*nats.Msg, error) {
	if e.SpecVersion == "" {
		e.SpecVersion = SpecVersion
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	n := 4 + len(e.Extensions)
	if !e.Time.IsZero() {
		n++
	}
	if e.Subject != "" {
		n++
	}
	if e.DataSchema != "" {
		n++
	}
	if e.DataContentType != "" {
		n++
	}
	// One backing array for every header value: a single allocation. A map
	// sized exactly stays in one group for up to 8 headers.
	vals := make([]string, n)
	h := make(nats.Header, n)
	i := 0
	set := func(key, v string) {
		vals[i] = EncodeHeaderValue(v)
		h[key] = vals[i : i+1 : i+1]
		i++
	}
	lineBreak := hasLineBreak(e.ID) || hasLineBreak(e.Source) || hasLineBreak(e.Type) ||
		hasLineBreak(e.Subject) || hasLineBreak(e.DataSchema) || hasLineBreak(e.DataContentType)
	set(hSpecVersion, e.SpecVersion)
	set(hID, e.ID)
	set(hSource, e.Source)
	set(hType, e.Type)
	if !e.Time.IsZero() {
		var buf [64]byte
		set(hTime, string(e.Time.AppendFormat(buf[:0], time.RFC3339Nano)))
	}
	if e.Subject != "" {
		set(hSubject, e.Subject)
	}
	if e.DataSchema != "" {
		set(hDataSchema, e.DataSchema)
	}
	if e.DataContentType != "" {
		// Content-Type is a media type, not a ce- header: it goes as is.
		vals[i] = e.DataContentType
		h[HeaderContentType] = vals[i : i+1 : i+1]
		i++
	}
	for name, v := range e.Extensions {
		if v == "" {
			continue
		}
		lineBreak = lineBreak || hasLineBreak(v)
		set(extHeader(name), v)
	}
	if lineBreak {
		return nil, lineBreakError(e)
	}
	if isCloudEventsContentType(e.DataContentType) {
		return nil, fmt.Errorf("%w: datacontenttype %q of event %s would make the message read as a structured event: use EncodeStructured or another content type", ErrInvalidAttribute, e.DataContentType, e.ID)
	}
	return &nats.Msg{Subject: subject, Header: h, Data: e.Data}, nil
}

func hasLineBreak(s string) bool {
	return strings.IndexByte(s, '\n') >= 0 || strings.IndexByte(s, '\r') >= 0
}

func lineBreakError(e Event) error {
	var bad []string
	for name, v := range map[string]string{"id": e.ID, "source": e.Source, "type": e.Type,
		"subject": e.Subject, "dataschema": e.DataSchema, "datacontenttype": e.DataContentType} {
		if hasLineBreak(v) {
			bad = append(bad, name)
		}
	}
	for name, v := range e.Extensions {
		if hasLineBreak(v) {
			bad = append(bad, name)
		}
	}
	slices.Sort(bad)
	return fmt.Errorf("%w: %s of event %s hold a line break, which NATS headers cannot carry: use EncodeStructured", ErrInvalidAttribute, strings.Join(bad, ", "), e.ID)
}

// extHeader returns "ce-"+name without allocating for the mesh's extensions.
func extHeader(name string) string {
	switch name {
	case ExtConversationID:
		return "ce-conversationid"
	case ExtRunID:
		return "ce-runid"
	case ExtStepID:
		return "ce-stepid"
	case ExtTaskID:
		return "ce-taskid"
	case ExtReplyTo:
		return "ce-replyto"
	case ExtDeadline:
		return "ce-deadline"
	case ExtTraceParent:
		return "ce-traceparent"
	}
	return headerPrefix + name
}

// EncodeStructured returns a structured-mode message: Content-Type
// application/cloudevents+json and the whole event as JSON in the body. JSON
// data travels inline as "data", text as a JSON string, anything else as
// "data_base64".
func EncodeStructured(subject string, e Event) (*nats.Msg, error) {
	if e.SpecVersion == "" {
		e.SpecVersion = SpecVersion
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 256+len(e.Data)+32*len(e.Extensions))
	b = append(b, `{"specversion":`...)
	b = appendJSONString(b, e.SpecVersion)
	b = appendAttr(b, "id", e.ID)
	b = appendAttr(b, "source", e.Source)
	b = appendAttr(b, "type", e.Type)
	b = appendAttr(b, "subject", e.Subject)
	b = appendAttr(b, "datacontenttype", e.DataContentType)
	b = appendAttr(b, "dataschema", e.DataSchema)
	if !e.Time.IsZero() {
		b = append(b, `,"time":"`...)
		b = e.Time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	names := make([]string, 0, len(e.Extensions))
	for name := range e.Extensions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b = appendAttr(b, name, e.Extensions[name])
	}
	if len(e.Data) > 0 {
		ct := e.DataContentType
		switch {
		case (ct == "" || isJSONContentType(ct)) && isBareJSON(e.Data):
			b = append(b, `,"data":`...)
			b = append(b, e.Data...)
		case ct != "" && !isJSONContentType(ct) && isTextContentType(ct) && utf8.Valid(e.Data):
			b = append(b, `,"data":`...)
			b = appendJSONString(b, string(e.Data))
		default:
			b = append(b, `,"data_base64":"`...)
			b = base64.StdEncoding.AppendEncode(b, e.Data)
			b = append(b, '"')
		}
	}
	b = append(b, '}')
	h := nats.Header{HeaderContentType: []string{ContentTypeStructured}}
	return &nats.Msg{Subject: subject, Header: h, Data: b}, nil
}

func isCloudEventsContentType(ct string) bool {
	ct = trimSpace(ct)
	const p = "application/cloudevents"
	return len(ct) >= len(p) && equalFoldASCII(ct[:len(p)], p)
}

// isBareJSON reports JSON that can travel inline and come back byte for byte:
// valid, with no surrounding whitespace.
func isBareJSON(b []byte) bool {
	return !isJSONSpace(b[0]) && !isJSONSpace(b[len(b)-1]) && json.Valid(b)
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isTextContentType(ct string) bool {
	return len(ct) >= 5 && equalFoldASCII(ct[:5], "text/")
}

func appendAttr(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// DecodeJS decodes the CloudEvent of a message taken from a JetStream
// consumer (see Decode).
func DecodeJS(m jetstream.Msg) (Event, error) {
	return Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
}

// Decode reads a CloudEvent from a message in either content mode. Structured
// mode is chosen when Content-Type is application/cloudevents+json, or when
// there are no ce- headers and the body is a JSON object with "specversion";
// otherwise binary mode. On error Decode still returns whatever it could read
// (the id and replyto, say) with an error wrapping ErrMalformedEvent,
// ErrMissingAttribute, ErrSpecVersion or ErrInvalidAttribute; every problem
// is reported.
func Decode(msg *nats.Msg) (Event, error) {
	if msg == nil {
		return Event{}, fmt.Errorf("%w: nil message", ErrMalformedEvent)
	}
	h := msg.Header
	var ct string
	ctFound, hasCE := false, false
	if v := h[HeaderContentType]; len(v) > 0 {
		ct, ctFound = v[0], true
	}
	if _, ok := h[hSpecVersion]; ok {
		hasCE = true
	} else if _, ok := h[hID]; ok {
		hasCE = true
	}
	if !ctFound || !hasCE {
		// Slow path: headers in another letter case, or none at all.
		for k, v := range h {
			if !ctFound && len(v) > 0 && equalFoldASCII(k, HeaderContentType) {
				ct, ctFound = v[0], true
			}
			if !hasCE && isCEHeader(k) {
				hasCE = true
			}
		}
	}
	if isStructuredContentType(ct) || (!hasCE && looksStructured(msg.Data)) {
		return decodeStructured(msg.Data)
	}
	if isCloudEventsContentType(ct) {
		return Event{}, fmt.Errorf("%w: Content-Type %q is not supported (batches and non-JSON event formats are not): publish one event per message, in binary mode or as %s", ErrMalformedEvent, ct, ContentTypeStructured)
	}
	if !hasCE {
		return Event{}, fmt.Errorf("%w: the message has no ce- headers and its body is not a structured CloudEvent: publish in binary mode (ce-specversion, ce-id, ce-source, ce-type headers) or structured mode (Content-Type: %s)", ErrMalformedEvent, ContentTypeStructured)
	}
	return decodeBinary(msg, ct)
}

func isCEHeader(k string) bool {
	return len(k) > 3 && k[0]|0x20 == 'c' && k[1]|0x20 == 'e' && k[2] == '-'
}

func isStructuredContentType(ct string) bool {
	if ct == "" {
		return false
	}
	if i := indexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return equalFoldASCII(trimSpace(ct), ContentTypeStructured)
}

func looksStructured(body []byte) bool {
	body = bytes.TrimLeft(body, " \t\r\n")
	return len(body) > 0 && body[0] == '{' && bytes.Contains(body, []byte(`"specversion"`))
}

func decodeBinary(msg *nats.Msg, ct string) (Event, error) {
	e := Event{DataContentType: ct}
	if len(msg.Data) > 0 {
		e.Data = msg.Data
	}
	var (
		errs    []error
		timeStr string
	)
	for k, v := range msg.Header {
		if !isCEHeader(k) || len(v) == 0 {
			continue
		}
		name := k[3:]
		if !isLowerASCII(name) {
			name = strings.ToLower(name)
		}
		val, err := decodeHeaderValue(k, v[0])
		if err != nil {
			// Keep what was sent, so the event still names its id or
			// replyto and no "missing attribute" joins the real error.
			errs = append(errs, err)
			if name == "time" {
				continue
			}
			val = v[0]
		}
		switch name {
		case "specversion":
			e.SpecVersion = val
		case "id":
			e.ID = val
		case "source":
			e.Source = val
		case "type":
			e.Type = val
		case "subject":
			e.Subject = val
		case "dataschema":
			e.DataSchema = val
		case "time":
			timeStr = val
		case "datacontenttype":
			if e.DataContentType == "" {
				e.DataContentType = val
			}
		default:
			if val == "" {
				continue
			}
			if e.Extensions == nil {
				e.Extensions = make(map[string]string, len(msg.Header))
			}
			e.Extensions[name] = val
		}
	}
	if timeStr != "" {
		t, err := time.Parse(time.RFC3339Nano, timeStr)
		if err != nil {
			errs = append(errs, badTime(timeStr))
		} else {
			e.Time = t
		}
	}
	if err := e.Validate(); err != nil {
		errs = append(errs, err)
	}
	if errs != nil {
		return e, errors.Join(errs...)
	}
	return e, nil
}

func badTime(v string) error {
	return fmt.Errorf("%w: time %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", ErrInvalidAttribute, clip(v))
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return false
		}
	}
	return true
}

// decodeStructured reads a structured-mode event: every context attribute
// and extension of the JSON object, checked one by one. It is long because
// the attributes are a flat list of checks, each with its own message.
func decodeStructured(body []byte) (Event, error) {
	var e Event
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return e, fmt.Errorf("%w: structured body is not a JSON object (%v): send the event as one JSON object with specversion, id, source and type", ErrMalformedEvent, err)
	}
	var (
		errs           []error
		data, data64   json.RawMessage
		hasData, has64 bool
	)
	str := func(name string, raw json.RawMessage) (string, bool) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s must be a JSON string, got %s", ErrInvalidAttribute, name, clip(string(raw))))
			return "", false
		}
		return s, true
	}
	for name, raw := range fields {
		if string(raw) == "null" {
			continue // a null attribute is an absent one
		}
		switch name {
		case "specversion":
			e.SpecVersion, _ = str(name, raw)
		case "id":
			e.ID, _ = str(name, raw)
		case "source":
			e.Source, _ = str(name, raw)
		case "type":
			e.Type, _ = str(name, raw)
		case "subject":
			e.Subject, _ = str(name, raw)
		case "datacontenttype":
			e.DataContentType, _ = str(name, raw)
		case "dataschema":
			e.DataSchema, _ = str(name, raw)
		case "time":
			if s, ok := str(name, raw); ok && s != "" {
				t, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					errs = append(errs, badTime(s))
				} else {
					e.Time = t
				}
			}
		case "data":
			data, hasData = raw, true
		case "data_base64":
			data64, has64 = raw, true
		default:
			v, err := extValue(name, raw)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if v != "" {
				if e.Extensions == nil {
					e.Extensions = make(map[string]string, len(fields))
				}
				e.Extensions[name] = v
			}
		}
	}
	switch {
	case hasData && has64:
		errs = append(errs, fmt.Errorf("%w: both data and data_base64 are set: send one", ErrMalformedEvent))
	case has64:
		if s, ok := str("data_base64", data64); ok {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: data_base64 is not standard base64 (%v)", ErrMalformedEvent, err))
			} else if len(b) > 0 {
				e.Data = b
			}
		}
	case hasData:
		ct := e.DataContentType
		if ct != "" && !isJSONContentType(ct) && len(data) > 0 && data[0] == '"' {
			var s string
			if err := json.Unmarshal(data, &s); err == nil {
				if s != "" {
					e.Data = []byte(s)
				}
				break
			}
		}
		e.Data = []byte(data)
	}
	if err := e.Validate(); err != nil {
		errs = append(errs, err)
	}
	if errs != nil {
		return e, errors.Join(errs...)
	}
	return e, nil
}

// extValue turns a structured extension attribute (string, number or bool)
// into its string form.
func extValue(name string, raw json.RawMessage) (string, error) {
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: extension %s: %v", ErrMalformedEvent, name, err)
		}
		return s, nil
	case 't', 'f':
		return string(raw), nil
	case '{', '[':
		return "", fmt.Errorf("%w: extension %s is a JSON object or array: extension values must be strings, numbers or booleans", ErrInvalidAttribute, name)
	default:
		return string(raw), nil
	}
}

// Emit publishes a new event of type typ from source with data on subject
// with a core NATS publish (the stream that captures subject stores it);
// set, when not nil, adds extensions first. It is how progress and status
// events go out: best effort, since the state they report lives in KV.
// An event that ends a request its sender waits for goes out with
// EventMsg and Publish instead: a core publish while the stream elects a
// leader (a node cut off or gone) is dropped without a word.
func Emit(nc *nats.Conn, subject, typ, source string, data any, set func(*Event)) error {
	msg, err := EventMsg(subject, typ, source, data, set)
	if err != nil {
		return err
	}
	return nc.PublishMsg(msg)
}

// EventMsg encodes a new event of type typ from source with data as a
// message on subject; set, when not nil, adds extensions first.
func EventMsg(subject, typ, source string, data any, set func(*Event)) (*nats.Msg, error) {
	ev, err := NewEvent(typ, source, data)
	if err != nil {
		return nil, err
	}
	if set != nil {
		set(&ev)
	}
	return Encode(subject, ev)
}
