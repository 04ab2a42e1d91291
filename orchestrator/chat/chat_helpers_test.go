package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// The seed agents: search -> analysis -> folders, wired only by contracts.

var searchParams = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer"}},"required":["query"]}`)

func chatSearchContract() schemas.AgentContract {
	return schemas.AgentContract{Name: "ImageSearch", Capability: schemas.CapSearch,
		Description: "Finds images matching a text query.", Params: searchParams,
		Outputs: []schemas.TypedOutput{fixture.FilesOut("images", schemas.ContentImages, true)}, CanChainWith: []string{"ImageAnalysis"}}
}

func chatAnalysisContract() schemas.AgentContract {
	return schemas.AgentContract{Name: "ImageAnalysis", Capability: schemas.CapAnalysis,
		Description: "Categorizes images by what they show.",
		Inputs:      []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)},
		Outputs:     []schemas.TypedOutput{{Name: "categories", DataType: schemas.TypeCategorization, Mergeable: true}}}
}

func chatFolderContract() schemas.AgentContract {
	return schemas.AgentContract{Name: "FolderOrganizer", Capability: schemas.CapOrganization,
		Description: "Moves categorized files into one folder per category.",
		Inputs:      []schemas.TypedInput{{Name: "categories", DataType: schemas.TypeCategorization, Required: true}},
		Outputs:     []schemas.TypedOutput{{Name: "folders", DataType: schemas.TypeFolderResult}}}
}

// seedAgents runs the three seed agents. Search returns 12 images named
// after the query (<query>-<n>) unless the query says how many: "q7:..."
// returns 7. searched receives every query.
func seedAgents(t testing.TB, m *meshtest.Mesh, searched chan<- string) {
	m.Agent(t, chatSearchContract(), func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		q := ec.Param("query")
		if searched != nil {
			searched <- q
		}
		n := 12
		if _, err := fmt.Sscanf(q, "q%d:", &n); err != nil {
			n = 12
		}
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-%d", strings.TrimSuffix(strings.SplitN(q, ":", 2)[0], ":"), i+1)
		}
		fc := schemas.FromIDs(schemas.ContentImages, ids...)
		return fixture.OK("ImageSearch", fmt.Sprintf("found %d images for %q", n, q), map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}), nil
	}, 8)
	m.Agent(t, chatAnalysisContract(), func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		fc, err := ec.Files("images")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		cat := schemas.Categorization{Categories: map[string][]string{}}
		for i, id := range fc.IDs() {
			k := []string{"beach", "mountain"}[i%2]
			cat.Categories[k] = append(cat.Categories[k], id)
		}
		return fixture.OK("ImageAnalysis", fmt.Sprintf("sorted %d images into %d categories", fc.Count(), len(cat.Categories)),
			map[string]schemas.TypedValue{"categories": fixture.MustValue(t, schemas.TypeCategorization, cat, "ImageAnalysis")}), nil
	}, 8)
	m.Agent(t, chatFolderContract(), func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		v, err := ec.Read("categories", schemas.TypeCategorization)
		if err != nil {
			return schemas.AgentResult{}, err
		}
		var cat schemas.Categorization
		if err := v.Decode(&cat); err != nil {
			return schemas.AgentResult{}, err
		}
		res := schemas.FolderResult{Folders: cat.Categories}
		for _, ids := range cat.Categories {
			res.Moved += len(ids)
		}
		return fixture.OK("FolderOrganizer", fmt.Sprintf("moved %d files into %d folders", res.Moved, len(res.Folders)),
			map[string]schemas.TypedValue{"folders": fixture.MustValue(t, schemas.TypeFolderResult, res, "FolderOrganizer")}), nil
	}, 8)
}

// chatReplica runs one orchestrator replica with the chat loop attached
// until the test ends (or until stop is called) and waits for the agents.
func chatReplica(t testing.TB, m *meshtest.Mesh, nc *nats.Conn, wait []string, opts ...chat.Option) (stop func()) {
	t.Helper()
	if nc == nil {
		nc = m.Srv.Conn(t)
	}
	o, err := orchestrator.New(nc, orchestrator.WithAckWait(2*time.Second), orchestrator.WithChat(opts...))
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- o.RunReady(rctx, func() { close(ready) }) }()
	var once sync.Once
	stop = func() { once.Do(func() { rcancel(); <-done }) }
	t.Cleanup(stop)
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("orchestrator stopped: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, a := range wait {
		if err := o.Registry().Wait(ctx, a, 1); err != nil {
			t.Fatal(err)
		}
	}
	return stop
}

func newLLM(t testing.TB, srv *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// chatEvents reads every event of a conversation from MESH_EVENTS.
type chatEvents struct {
	mu     sync.Mutex
	events []bus.Event
	final  chan schemas.ChatResponse
}

func followChat(t testing.TB, m *meshtest.Mesh, conv string) *chatEvents {
	t.Helper()
	js := m.Srv.JetStream(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Only events from now on: earlier turns of the conversation answered already.
	start := time.Now()
	cons, err := js.OrderedConsumer(ctx, m.Srv.Names().EventsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{m.Srv.Names().EventsOf(conv)}, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start})
	if err != nil {
		t.Fatal(err)
	}
	ce := &chatEvents{final: make(chan schemas.ChatResponse, 4)}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		ev, err := bus.Decode(&nats.Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()})
		if err != nil {
			return
		}
		ce.mu.Lock()
		ce.events = append(ce.events, ev)
		ce.mu.Unlock()
		if ev.Type == bus.TypeChatResponded {
			var r schemas.ChatResponse
			if ev.DataAs(&r) == nil {
				ce.final <- r
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return ce
}

func (ce *chatEvents) progress() []string {
	ce.mu.Lock()
	defer ce.mu.Unlock()
	var out []string
	for _, ev := range ce.events {
		if ev.Type == bus.TypeChatProgress {
			var p schemas.TaskProgress
			_ = ev.DataAs(&p)
			out = append(out, p.Message)
		}
	}
	return out
}

func (ce *chatEvents) wait(t testing.TB, within time.Duration) schemas.ChatResponse {
	t.Helper()
	select {
	case r := <-ce.final:
		return r
	case <-time.After(within):
		t.Fatalf("no chat.responded within %s; progress: %q", within, ce.progress())
		return schemas.ChatResponse{}
	}
}

// ask sends a chat message and returns the final response.
func ask(t testing.TB, m *meshtest.Mesh, conv, message string) (string, schemas.ChatResponse, *chatEvents) {
	t.Helper()
	if conv == "" {
		conv = fmt.Sprintf("c%d", time.Now().UnixNano())
	}
	ce := followChat(t, m, conv)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := client.SendChat(ctx, m.Srv.JetStream(t), m.Srv.Names(), conv, message, "test"); err != nil {
		t.Fatal(err)
	}
	return conv, ce.wait(t, 30*time.Second), ce
}

func conversation(t testing.TB, m *meshtest.Mesh, conv string) *schemas.ConversationState {
	t.Helper()
	st, err := state.New(m.Res.Conversations, m.Res.Runs).Conversation(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func slotCount(t testing.TB, st *schemas.ConversationState, slot string) int {
	t.Helper()
	v, found := st.Slots[slot]
	if !found {
		t.Fatalf("slot %s is empty; slots: %v", slot, st.Slots)
	}
	return chat.Summarize(slot, v, schemas.DefaultRegistry()).Count
}

func toolMessages(r llmtest.Request) []string {
	var out []string
	for _, m := range r.MessagesOf("tool") {
		out = append(out, m.Content)
	}
	return out
}

func dataMessage(t testing.TB, r llmtest.Request) string {
	t.Helper()
	for _, m := range r.MessagesOf("system") {
		if strings.HasPrefix(m.Content, "## Data: ¶state") {
			return m.Content
		}
	}
	t.Fatalf("no ¶state Data message in %+v", r.Body.Messages)
	return ""
}

var agentIDs = []string{"sunset-1", "sunset-2", "sunset-12"}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
