package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
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
