package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// sseEvent is one server-sent event as a browser's EventSource sees it.
type sseEvent struct {
	ID, Type string
	Data     map[string]any // the CloudEvent in JSON
	Raw      string
}

// openSSE opens an event stream, checks its answer against the document,
// and delivers its events until the test ends.
func (m *testMesh) openSSE(t *testing.T, path string, header ...string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", m.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	m.spec.check(t, req, nil, response{status: resp.StatusCode, header: resp.Header})
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s: %d %s, want 200 text/event-stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 256)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		var data strings.Builder
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Type != "" {
					ev.Raw = data.String()
					_ = json.Unmarshal([]byte(ev.Raw), &ev.Data)
					select {
					case ch <- ev:
					case <-ctx.Done():
						return
					}
				}
				ev, data = sseEvent{}, strings.Builder{}
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				data.WriteString(line[6:])
			}
		}
	}()
	return ch
}

// waitEvent reads events until one of type typ passes keep (nil: any).
func waitEvent(t *testing.T, ch <-chan sseEvent, typ string, keep func(sseEvent) bool) sseEvent {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-ch:
			checkCloudEvent(t, ev)
			if ev.Type == typ && (keep == nil || keep(ev)) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event within 30s", typ)
		}
	}
}

// nextEvent returns the stream's next event.
func nextEvent(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev := <-ch:
		checkCloudEvent(t, ev)
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
		return sseEvent{}
	}
}

// dataOf returns the CloudEvent's data member.
func dataOf(ev sseEvent) map[string]any {
	d, _ := ev.Data["data"].(map[string]any)
	return d
}

// checkCloudEvent reads an event's data with the CloudEvents SDK for Go
// (the JSON event format): it must be a valid CloudEvent whose type and
// id are the stream's event and id fields.
func checkCloudEvent(t *testing.T, ev sseEvent) {
	t.Helper()
	if ev.Type == TypeDelta { // a piece of text, not a CloudEvent
		var d schemas.ChatDelta
		if err := json.Unmarshal([]byte(ev.Raw), &d); err != nil || d.Text == "" || d.Seq < 1 || ev.ID != "" {
			t.Fatalf("delta event %+v: %v", ev, err)
		}
		return
	}
	var ce cloudevents.Event
	if err := json.Unmarshal([]byte(ev.Raw), &ce); err != nil {
		t.Fatalf("event %s: the CloudEvents SDK cannot read it: %v\n%s", ev.Type, err, ev.Raw)
	}
	if err := ce.Validate(); err != nil {
		t.Fatalf("event %s: not a valid CloudEvent: %v", ev.Type, err)
	}
	if ce.Type() != ev.Type || (ev.ID != "" && ce.ID() != ev.ID) {
		t.Fatalf("event: stream fields %s/%s, CloudEvent %s/%s", ev.Type, ev.ID, ce.Type(), ce.ID())
	}
}

// A conversation's event stream carries the text its model writes, piece
// by piece as the chat loop publishes it on mesh.delta.<conversation>,
// between the stored events; ?deltas=0 leaves it out.
func TestConversationEventsCarryDeltas(t *testing.T) {
	m := newTestMesh(t)
	conv := "c-deltas"
	events := m.openSSE(t, "/api/conversations/"+conv+"/events")
	quiet := m.openSSE(t, "/api/conversations/"+conv+"/events?deltas=0")
	nc := m.srv.Conn(t)
	pieces := []string{"I found ", "12 sunset ", "images."}
	for i, p := range pieces {
		b, _ := json.Marshal(schemas.ChatDelta{ConversationID: conv, Turn: 1, Step: 1, Seq: i + 1, Text: p})
		if err := nc.Publish(m.srv.Names().Deltas(conv), b); err != nil {
			t.Fatal(err)
		}
	}
	var got strings.Builder
	for i := range pieces {
		ev := waitEvent(t, events, TypeDelta, nil)
		if ev.ID != "" || ev.Data["conversation_id"] != conv || ev.Data["seq"] != float64(i+1) {
			t.Errorf("delta event %+v", ev)
		}
		got.WriteString(ev.Data["text"].(string))
	}
	if got.String() != strings.Join(pieces, "") {
		t.Errorf("streamed %q", got.String())
	}
	// The quiet stream sees the next stored event and no delta before it.
	if _, _, err := client.SendChat(context.Background(), m.srv.JetStream(t), m.srv.Names(), conv, "find sunset images", "test"); err != nil {
		t.Fatal(err)
	}
	for {
		ev := nextEvent(t, quiet)
		if ev.Type == TypeDelta {
			t.Fatalf("?deltas=0 stream had %+v", ev)
		}
		if ev.Type == bus.TypeChatResponded {
			break
		}
	}
}

// The seed chat with a streaming model, with each provider's scripted
// server (search, categorise, file into folders, answer): the
// conversation's event stream carries the answer's text while the model
// writes it (the model holds the rest of its answer until the test has
// read the first piece), then the whole answer in chat.responded.
func TestConversationEventsStreamTheChatModel(t *testing.T) {
	const answer = "I found your sunset photos and put them in folders."
	chunks := []string{"I found your", " sunset photos", " and put them in folders."}
	for _, p := range []struct {
		name  string
		model func(t *testing.T, replies ...llmtest.Reply) llm.Config
	}{
		{"openai", func(t *testing.T, r ...llmtest.Reply) llm.Config { return llmtest.New(t, r...).Config() }},
		{"anthropic", func(t *testing.T, r ...llmtest.Reply) llm.Config { return llmtest.NewAnthropic(t, r...).Config() }},
		{"gemini", func(t *testing.T, r ...llmtest.Reply) llm.Config { return llmtest.NewGemini(t, r...).Config() }},
	} {
		t.Run(p.name, func(t *testing.T) {
			gate := make(chan struct{})
			var once sync.Once
			open := func() { once.Do(func() { close(gate) }) }
			t.Cleanup(open)
			c, err := llm.New(p.model(t,
				llmtest.Calls(llmtest.Call("ImageSearchAgent", map[string]any{"query": "sunset"})),
				llmtest.Calls(llmtest.Call("AnalysisAgent", map[string]any{})),
				llmtest.Calls(llmtest.Call("FolderAgent", map[string]any{"categories": "†state.current_categorization"})),
				llmtest.Reply{Content: answer, Chunks: chunks, Gate: gate}))
			if err != nil {
				t.Fatal(err)
			}
			m := newTestMeshChat(t, []chat.Option{chat.WithLLM(c)})
			conv := "c-stream-" + p.name
			events := m.openSSE(t, "/api/conversations/"+conv+"/events")
			if r := m.postJSON(t, "/api/chat", `{"message":"Find sunset images and organize them into folders","conversation_id":"`+conv+`","new":true}`); r.status != 202 {
				t.Fatalf("chat: %d %s", r.status, r.body)
			}
			first := waitEvent(t, events, TypeDelta, nil)
			if first.Data["text"] != chunks[0] || first.Data["conversation_id"] != conv {
				t.Fatalf("first piece %v", first.Data)
			}
			open()
			text := chunks[0]
			for {
				ev := nextEvent(t, events)
				if ev.Type == TypeDelta {
					text += ev.Data["text"].(string)
					continue
				}
				if ev.Type == bus.TypeChatResponded {
					d := dataOf(ev)
					if calls, _ := d["tool_calls"].([]any); d["output"] != answer || text != answer || d["state"] != "completed" || len(calls) != 3 {
						t.Fatalf("answer %v, streamed %q", d, text)
					}
					for _, c := range d["tool_calls"].([]any) {
						if rec, _ := c.(map[string]any); rec["success"] != true {
							t.Errorf("tool call %v", rec)
						}
					}
					return
				}
			}
		})
	}
}
