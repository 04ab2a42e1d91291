package bus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	ce "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
	"github.com/agentmesh/agentmesh/schemas"
)

func fullEvent(t *testing.T) bus.Event {
	t.Helper()
	e, err := bus.NewEvent(bus.TypeTaskRequested, "agentmesh/orchestrator", json.RawMessage(benchsuite.TaskData))
	if err != nil {
		t.Fatal(err)
	}
	e.Subject = "search"
	e.DataSchema = "https://agentmesh.io/schemas/task.json"
	e.Time = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for _, x := range []struct{ k, v string }{
		{bus.ExtConversationID, "c-1"}, {bus.ExtRunID, "r-1"}, {bus.ExtStepID, "s-1"},
		{bus.ExtTaskID, "t-1"}, {bus.ExtReplyTo, "mesh.result.TextAgent.orchestrator.c-1"},
		{bus.ExtDeadline, "2026-01-02T03:05:05Z"}, {bus.ExtTraceParent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{"custom1", "x y"},
	} {
		e.SetExt(x.k, x.v)
	}
	return e
}

func assertSameEvent(t *testing.T, got, want bus.Event) {
	t.Helper()
	if !got.Time.Equal(want.Time) {
		t.Errorf("time = %v, want %v", got.Time, want.Time)
	}
	got.Time, want.Time = time.Time{}, time.Time{}
	if !bytes.Equal(got.Data, want.Data) {
		t.Errorf("data = %s, want %s", got.Data, want.Data)
	}
	got.Data, want.Data = nil, nil
	if len(got.Extensions) == 0 && len(want.Extensions) == 0 {
		got.Extensions, want.Extensions = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("event differs:\n got  %+v\n want %+v", got, want)
	}
}

func TestNewEvent(t *testing.T) {
	e, err := bus.NewEvent(bus.TypeChatRequested, "cli", map[string]string{"message": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID == "" || e.SpecVersion != "1.0" || e.DataContentType != "application/json" || e.Time.Location() != time.UTC {
		t.Errorf("NewEvent = %+v", e)
	}
	if string(e.Data) != `{"message":"hi"}` {
		t.Errorf("data = %s", e.Data)
	}
	if _, err := bus.NewEvent("t", "s", func() {}); !errors.Is(err, bus.ErrInvalidData) {
		t.Errorf("unmarshalable data: %v", err)
	}
	if err := e.Validate(); err != nil {
		t.Error(err)
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	want := fullEvent(t)
	msg, err := bus.Encode("mesh.task.search", want)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "mesh.task.search" {
		t.Errorf("subject %q", msg.Subject)
	}
	for k, v := range map[string]string{
		"ce-specversion": "1.0", "ce-id": want.ID, "ce-source": want.Source, "ce-type": want.Type,
		"ce-time": "2026-01-02T03:04:05.123456789Z", "ce-subject": "search",
		"ce-dataschema": want.DataSchema, "Content-Type": "application/json",
		"ce-replyto": "mesh.result.TextAgent.orchestrator.c-1", "ce-custom1": "x%20y", // percent-encoded space
	} {
		if got := msg.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if !bytes.Equal(msg.Data, want.Data) {
		t.Errorf("body = %s", msg.Data)
	}
	got, err := bus.Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	assertSameEvent(t, got, want)
}

func TestBinaryDecodeAnyHeaderCase(t *testing.T) {
	msg := nats.NewMsg("x")
	msg.Header["CE-SPECVERSION"] = []string{"1.0"}
	msg.Header["Ce-Id"] = []string{"1"}
	msg.Header["ce-Source"] = []string{"s"}
	msg.Header["Ce-Type"] = []string{"t"}
	msg.Header["Ce-ReplyTo"] = []string{"r"}
	msg.Header["content-type"] = []string{"text/plain"}
	msg.Data = []byte("hello")
	e, err := bus.Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "1" || e.Source != "s" || e.Type != "t" || e.Ext("replyto") != "r" || e.DataContentType != "text/plain" || string(e.Data) != "hello" {
		t.Errorf("decoded %+v", e)
	}
}

func TestStructuredRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		ct   string
		data []byte
	}{
		{"json", "application/json", []byte(`{"a":[1,2,{"b":"c"}]}`)},
		{"text", "text/plain", []byte("hello \"world\"\n")},
		{"binary", "application/octet-stream", []byte{0, 1, 2, 0xff}},
		{"no data", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := fullEvent(t)
			want.DataContentType, want.Data = tc.ct, tc.data
			msg, err := bus.EncodeStructured("mesh.task.search", want)
			if err != nil {
				t.Fatal(err)
			}
			if got := msg.Header.Get("Content-Type"); got != "application/cloudevents+json" {
				t.Errorf("Content-Type %q", got)
			}
			if !json.Valid(msg.Data) {
				t.Fatalf("body is not JSON: %s", msg.Data)
			}
			got, err := bus.Decode(msg)
			if err != nil {
				t.Fatal(err)
			}
			assertSameEvent(t, got, want)
		})
	}
}

func TestStructuredByHand(t *testing.T) {
	body := `{
		"specversion": "1.0",
		"id": "abc-1",
		"source": "nats-cli",
		"type": "io.agentmesh.chat.requested",
		"time": "2026-03-04T05:06:07+01:00",
		"datacontenttype": "application/json",
		"conversationid": "conv-9",
		"attempt": 3,
		"urgent": true,
		"data": {"message": "find sunsets"}
	}`
	for _, withHeader := range []bool{true, false} {
		msg := &nats.Msg{Subject: "mesh.chat.request", Data: []byte(body)}
		if withHeader {
			msg.Header = nats.Header{"Content-Type": {"application/cloudevents+json; charset=utf-8"}}
		}
		e, err := bus.Decode(msg)
		if err != nil {
			t.Fatalf("header %v: %v", withHeader, err)
		}
		if e.ID != "abc-1" || e.Type != bus.TypeChatRequested || e.Ext(bus.ExtConversationID) != "conv-9" ||
			e.Ext("attempt") != "3" || e.Ext("urgent") != "true" {
			t.Errorf("decoded %+v", e)
		}
		if !e.Time.Equal(time.Date(2026, 3, 4, 4, 6, 7, 0, time.UTC)) {
			t.Errorf("time %v", e.Time)
		}
		var data struct{ Message string }
		if err := e.DataAs(&data); err != nil || data.Message != "find sunsets" {
			t.Errorf("DataAs = %+v, %v", data, err)
		}
	}
}

func TestStructuredDataForms(t *testing.T) {
	tests := []struct {
		name, fields, want string
	}{
		{"array", `"data":[1,2,3]`, `[1,2,3]`},
		{"json string", `"data":"plain"`, `"plain"`},
		{"text string", `"datacontenttype":"text/plain","data":"plain"`, `plain`},
		{"base64", `"datacontenttype":"application/octet-stream","data_base64":"aGVsbG8="`, `hello`},
		{"null", `"data":null`, ``},
	}
	for _, tt := range tests {
		body := `{"specversion":"1.0","id":"1","source":"s","type":"t",` + tt.fields + `}`
		e, err := bus.Decode(&nats.Msg{Data: []byte(body)})
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(e.Data) != tt.want {
			t.Errorf("%s: data %q, want %q", tt.name, e.Data, tt.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	structured := func(body string) *nats.Msg {
		return &nats.Msg{Header: nats.Header{"Content-Type": {"application/cloudevents+json"}}, Data: []byte(body)}
	}
	binary := func(kv ...string) *nats.Msg {
		m := nats.NewMsg("x")
		for i := 0; i < len(kv); i += 2 {
			m.Header.Set(kv[i], kv[i+1])
		}
		return m
	}
	tests := []struct {
		name     string
		msg      *nats.Msg
		sentinel error
		mentions []string
	}{
		{"bad json", structured(`{"id": "1",`), bus.ErrMalformedEvent, []string{"JSON"}},
		{"not an object", structured(`[1,2]`), bus.ErrMalformedEvent, []string{"JSON object"}},
		{"missing id", structured(`{"specversion":"1.0","source":"s","type":"t"}`), bus.ErrMissingAttribute, []string{"id"}},
		{"missing type", structured(`{"specversion":"1.0","id":"1","source":"s"}`), bus.ErrMissingAttribute, []string{"type"}},
		{"missing source", structured(`{"specversion":"1.0","id":"1","type":"t"}`), bus.ErrMissingAttribute, []string{"source"}},
		{"spec 0.3", structured(`{"specversion":"0.3","id":"1","source":"s","type":"t"}`), bus.ErrSpecVersion, []string{`"0.3"`, "1.0"}},
		{"binary missing type", binary("ce-specversion", "1.0", "ce-id", "1", "ce-source", "s"), bus.ErrMissingAttribute, []string{"type"}},
		{"binary spec 0.3", binary("ce-specversion", "0.3", "ce-id", "1", "ce-source", "s", "ce-type", "t"), bus.ErrSpecVersion, []string{`"0.3"`}},
		{"binary bad time", binary("ce-specversion", "1.0", "ce-id", "1", "ce-source", "s", "ce-type", "t", "ce-time", "yesterday"), bus.ErrInvalidAttribute, []string{"yesterday", "RFC 3339"}},
		{"not a cloudevent", &nats.Msg{Data: []byte("hello")}, bus.ErrMalformedEvent, []string{"ce-", "structured"}},
		{"bad base64", structured(`{"specversion":"1.0","id":"1","source":"s","type":"t","data_base64":"@@"}`), bus.ErrMalformedEvent, []string{"base64"}},
		{"bad extension name", structured(`{"specversion":"1.0","id":"1","source":"s","type":"t","BadName":"x"}`), bus.ErrInvalidAttribute, []string{"BadName"}},
		{"object extension", structured(`{"specversion":"1.0","id":"1","source":"s","type":"t","ext":{"a":1}}`), bus.ErrInvalidAttribute, []string{"ext"}},
		{"id not a string", structured(`{"specversion":"1.0","id":1,"source":"s","type":"t"}`), bus.ErrInvalidAttribute, []string{"id"}},
	}
	for _, tt := range tests {
		_, err := bus.Decode(tt.msg)
		if !errors.Is(err, tt.sentinel) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.sentinel)
			continue
		}
		for _, m := range tt.mentions {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not mention %q", tt.name, err, m)
			}
		}
	}
}

func TestDecodeReportsEveryProblem(t *testing.T) {
	_, err := bus.Decode(&nats.Msg{Header: nats.Header{"Content-Type": {"application/cloudevents+json"}},
		Data: []byte(`{"specversion":"0.3","replyto":"r"}`)})
	for _, want := range []error{bus.ErrSpecVersion, bus.ErrMissingAttribute} {
		if !errors.Is(err, want) {
			t.Errorf("err = %v, want it to wrap %v", err, want)
		}
	}
	for _, attr := range []string{"id", "source", "type"} {
		if !strings.Contains(err.Error(), "attribute: "+attr) {
			t.Errorf("error %q does not name %s", err, attr)
		}
	}
}

func TestDecodePartialEvent(t *testing.T) {
	m := nats.NewMsg("mesh.task.search")
	m.Header.Set("ce-specversion", "1.0")
	m.Header.Set("ce-id", "task-7")
	m.Header.Set("ce-source", "client")
	m.Header.Set("ce-replyto", "inbox.1")
	e, err := bus.Decode(m)
	if !errors.Is(err, bus.ErrMissingAttribute) {
		t.Fatalf("err = %v", err)
	}
	if e.ID != "task-7" || e.Ext(bus.ExtReplyTo) != "inbox.1" {
		t.Errorf("partial event lost id or replyto: %+v", e)
	}
}

func TestDataAs(t *testing.T) {
	e := fullEvent(t)
	var task schemas.TaskRequest
	if err := e.DataAs(&task); err != nil {
		t.Fatal(err)
	}
	if task.Instruction != "find sunsets" || task.Inputs["images"].DataType != schemas.TypeFileIDs {
		t.Errorf("task = %+v", task)
	}
	e.Data = []byte(`{"timeout_ms":"soon"}`)
	err := e.DataAs(&task)
	var typeErr *json.UnmarshalTypeError
	if !errors.Is(err, bus.ErrInvalidData) || !errors.As(err, &typeErr) {
		t.Fatalf("err = %v, want ErrInvalidData wrapping the JSON error", err)
	}
	for _, want := range []string{bus.TypeTaskRequested, "TaskRequest", "timeout_ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	e.Data = []byte(`{not json`)
	if err := e.DataAs(&task); !errors.Is(err, bus.ErrInvalidData) {
		t.Errorf("bad JSON: %v", err)
	}
	e.Data = nil
	if err := e.DataAs(&task); !errors.Is(err, bus.ErrInvalidData) {
		t.Errorf("no data: %v", err)
	}
}

func TestDecodeData(t *testing.T) {
	e := fullEvent(t)
	schemaErr := errors.New(`/timeout_ms: expected integer`)
	var task schemas.TaskRequest
	err := bus.DecodeData(e, &task, func([]byte) error { return schemaErr })
	if !errors.Is(err, bus.ErrInvalidData) || !errors.Is(err, schemaErr) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), bus.TypeTaskRequested) {
		t.Errorf("error %q does not name the event type", err)
	}
	called := false
	if err := bus.DecodeData(e, &task, func(b []byte) error { called = bytes.Equal(b, e.Data); return nil }); err != nil || !called {
		t.Errorf("valid data: err %v, validator saw the data: %v", err, called)
	}
}

func TestValidateEvent(t *testing.T) {
	e := bus.Event{SpecVersion: "1.0", ID: "1", Source: "s", Type: "t",
		Extensions: map[string]string{"ok1": "x", "Bad": "x", "waytoolongextensionname": "x", "id": "x", "with-dash": "x"}}
	err := e.Validate()
	if !errors.Is(err, bus.ErrInvalidAttribute) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`"Bad"`, `"waytoolongextensionname"`, `"id"`, `"with-dash"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "ok1") {
		t.Errorf("error %q mentions the valid extension", err)
	}
}

func TestDeadline(t *testing.T) {
	var e bus.Event
	if _, ok, err := e.Deadline(); ok || err != nil {
		t.Errorf("no deadline: ok %v err %v", ok, err)
	}
	e.SetExt(bus.ExtDeadline, "2026-01-02T03:04:05.5Z")
	d, ok, err := e.Deadline()
	if !ok || err != nil || !d.Equal(time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC)) {
		t.Errorf("Deadline = %v %v %v", d, ok, err)
	}
	e.SetExt(bus.ExtDeadline, "tomorrow")
	if _, _, err := e.Deadline(); !errors.Is(err, bus.ErrInvalidAttribute) {
		t.Errorf("bad deadline: %v", err)
	}
	e.SetExt(bus.ExtDeadline, "")
	if _, ok := e.Extensions[bus.ExtDeadline]; ok {
		t.Error("SetExt with an empty value should remove the extension")
	}
}

func TestEncodeRejects(t *testing.T) {
	e := fullEvent(t)
	e.SetExt(bus.ExtReplyTo, "a\r\nInjected: yes")
	if _, err := bus.Encode("x", e); !errors.Is(err, bus.ErrInvalidAttribute) || !strings.Contains(err.Error(), "replyto") {
		t.Errorf("line break: %v", err)
	}
	if _, err := bus.EncodeStructured("x", e); err != nil {
		t.Errorf("structured mode carries line breaks: %v", err)
	}
	e = fullEvent(t)
	e.Type = ""
	if _, err := bus.Encode("x", e); !errors.Is(err, bus.ErrMissingAttribute) {
		t.Errorf("missing type: %v", err)
	}
}

// natsToHTTP copies NATS headers into net/http headers, as a gateway would,
// undoing the percent-encoding of ce- header values with net/url (sdk-go's
// HTTP binding does not decode header values itself).
func natsToHTTP(t *testing.T, h nats.Header) http.Header {
	t.Helper()
	out := http.Header{}
	for k, vs := range h {
		for _, v := range vs {
			if strings.HasPrefix(strings.ToLower(k), "ce-") {
				var err error
				if v, err = url.PathUnescape(v); err != nil {
					t.Fatalf("header %s: %v", k, err)
				}
			}
			out.Add(k, v)
		}
	}
	return out
}

func TestSDKReadsBinary(t *testing.T) {
	want := fullEvent(t)
	msg, err := bus.Encode("mesh.task.search", want)
	if err != nil {
		t.Fatal(err)
	}
	m := cehttp.NewMessage(natsToHTTP(t, msg.Header), io.NopCloser(bytes.NewReader(msg.Data)))
	if m.ReadEncoding() != binding.EncodingBinary {
		t.Fatalf("sdk-go sees encoding %v, want binary", m.ReadEncoding())
	}
	got, err := binding.ToEvent(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	assertSDKEvent(t, got, want)
}

func TestSDKReadsStructured(t *testing.T) {
	want := fullEvent(t)
	msg, err := bus.EncodeStructured("mesh.task.search", want)
	if err != nil {
		t.Fatal(err)
	}
	var got ce.Event
	if err := json.Unmarshal(msg.Data, &got); err != nil {
		t.Fatal(err)
	}
	assertSDKEvent(t, &got, want)
}

func assertSDKEvent(t *testing.T, got *ce.Event, want bus.Event) {
	t.Helper()
	if err := got.Validate(); err != nil {
		t.Errorf("sdk-go says the event is invalid: %v", err)
	}
	checks := []struct{ name, got, want string }{
		{"id", got.ID(), want.ID}, {"source", got.Source(), want.Source}, {"type", got.Type(), want.Type},
		{"subject", got.Subject(), want.Subject}, {"specversion", got.SpecVersion(), want.SpecVersion},
		{"datacontenttype", got.DataContentType(), want.DataContentType}, {"dataschema", got.DataSchema(), want.DataSchema},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !got.Time().Equal(want.Time) {
		t.Errorf("time = %v, want %v", got.Time(), want.Time)
	}
	for k, v := range want.Extensions {
		if gv := fmt.Sprint(got.Extensions()[k]); gv != v {
			t.Errorf("extension %s = %q, want %q", k, gv, v)
		}
	}
	var a, b any
	if err := json.Unmarshal(got.Data(), &a); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(want.Data, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("data = %s, want %s", got.Data(), want.Data)
	}
}

func TestDecodeSDKStructured(t *testing.T) {
	ev := ce.New()
	ev.SetID("sdk-1")
	ev.SetSource("sdk")
	ev.SetType(bus.TypeTaskCompleted)
	ev.SetTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ev.SetExtension(bus.ExtTaskID, "t-1")
	if err := ev.SetData(ce.ApplicationJSON, map[string]any{"success": true}); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	e, err := bus.Decode(&nats.Msg{Header: nats.Header{"Content-Type": {ce.ApplicationCloudEventsJSON}}, Data: body})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "sdk-1" || e.Ext(bus.ExtTaskID) != "t-1" || string(e.Data) != `{"success":true}` {
		t.Errorf("decoded %+v (data %s)", e, e.Data)
	}
}
