package chat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/internal/meshtest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// The seed agents: search -> analysis -> folders, wired only by contracts.

var searchParams = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer"}},"required":["query"]}`)

func chatSearchContract() schemas.AgentContract {
	return schemas.AgentContract{Name: "ImageSearch", Capability: schemas.CapSearch,
		Description: "Finds images matching a text query.", Params: searchParams,
		Outputs: []schemas.TypedOutput{meshtest.FilesOut("images", schemas.ContentImages, true)}, CanChainWith: []string{"ImageAnalysis"}}
}

func chatAnalysisContract() schemas.AgentContract {
	return schemas.AgentContract{Name: "ImageAnalysis", Capability: schemas.CapAnalysis,
		Description: "Categorizes images by what they show.",
		Inputs:      []schemas.TypedInput{meshtest.FilesIn("images", schemas.ContentImages, true)},
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
		return meshtest.OK("ImageSearch", fmt.Sprintf("found %d images for %q", n, q), map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}), nil
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
		return meshtest.OK("ImageAnalysis", fmt.Sprintf("sorted %d images into %d categories", fc.Count(), len(cat.Categories)),
			map[string]schemas.TypedValue{"categories": meshtest.MustValue(t, schemas.TypeCategorization, cat, "ImageAnalysis")}), nil
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
		return meshtest.OK("FolderOrganizer", fmt.Sprintf("moved %d files into %d folders", res.Moved, len(res.Folders)),
			map[string]schemas.TypedValue{"folders": meshtest.MustValue(t, schemas.TypeFolderResult, res, "FolderOrganizer")}), nil
	}, 8)
}

// chatReplica runs one orchestrator replica with the chat loop attached
// until the test ends (or until stop is called) and waits for the agents.
func chatReplica(t testing.TB, m *meshtest.Mesh, nc *nats.Conn, wait []string, opts ...chat.Option) (stop func()) {
	t.Helper()
	if nc == nil {
		nc = m.Srv.Conn(t)
	}
	o, err := orchestrator.New(nc, orchestrator.WithAckWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orchestrator.AttachChat(o, opts...); err != nil {
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
	return chat.Summarize(slot, v).Count
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

func TestChatSeedScenarioOverThreeIterations(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"})),
		llmtest.Calls(llmtest.Call("ImageAnalysis", map[string]any{})),
		llmtest.Calls(llmtest.Call("FolderOrganizer", map[string]any{"categories": "†state.current_categorization"})),
		llmtest.Answer("I found 12 sunset images and organized them into 2 folders."),
	)
	chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"}, chat.WithLLM(newLLM(t, srv)))

	conv, resp, ce := ask(t, m, "", "Find sunset images and organize them into folders")

	if resp.State != schemas.ChatCompleted || resp.Output != "I found 12 sunset images and organized them into 2 folders." || resp.Planner != "llm" {
		t.Fatalf("response = %+v", resp)
	}
	if resp.Steps != 4 || len(resp.ToolCalls) != 3 || resp.Tokens != (schemas.Tokens{Prompt: 400, Completion: 80}) || resp.ConversationID != conv {
		t.Fatalf("steps %d, tool calls %+v, tokens %+v", resp.Steps, resp.ToolCalls, resp.Tokens)
	}
	for i, want := range []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"} {
		if tc := resp.ToolCalls[i]; tc.Agent != want || !tc.Success || tc.TaskID == "" {
			t.Errorf("tool call %d = %+v, want a successful %s", i, tc, want)
		}
	}

	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model saw %d requests, want 4", len(reqs))
	}
	for i, r := range reqs {
		if got := r.ToolNames(); !slices.Equal(got, []string{"FolderOrganizer", "ImageAnalysis", "ImageSearch"}) {
			t.Errorf("request %d tools = %v, want one per live agent", i, got)
		}
		data := dataMessage(t, r)
		if !strings.Contains(data, "```json") || !strings.Contains(data, "Schema for ¶state:") {
			t.Errorf("request %d: Data message is not rendered as Data: %s", i, data)
		}
		for _, id := range agentIDs {
			if strings.Contains(string(r.Raw), `"`+id+`"`) {
				t.Errorf("request %d carries the raw file ID %s", i, id)
			}
		}
	}
	search, _ := reqs[0].Tool("ImageSearch")
	params, _ := json.Marshal(search.Parameters)
	if !jsonEqual(params, searchParams) {
		t.Errorf("ImageSearch parameters = %s, want the contract's params %s", params, searchParams)
	}
	if !strings.Contains(search.Description, "Finds images") || !strings.Contains(search.Description, "FILE_IDS, images") {
		t.Errorf("ImageSearch description = %q, want the contract's description and output types", search.Description)
	}
	if folder, _ := reqs[0].Tool("FolderOrganizer"); !strings.Contains(folder.Description, "categories (CATEGORIZATION, required") {
		t.Errorf("FolderOrganizer description = %q, want its inputs", folder.Description)
	}
	if data := dataMessage(t, reqs[1]); !strings.Contains(data, `"current_image_ids"`) || !strings.Contains(data, `"count": 12`) {
		t.Errorf("second request's state does not show 12 images: %s", data)
	}
	obs := toolMessages(reqs[3])
	if len(obs) != 3 || !strings.Contains(obs[0], "12 images") || !strings.Contains(obs[1], "2 categories") || !strings.Contains(obs[2], "2 folders (12 files moved)") {
		t.Errorf("observations = %q, want counts", obs)
	}

	st := conversation(t, m, conv)
	if n := slotCount(t, st, route.SlotImageIDs); n != 12 {
		t.Errorf("current_image_ids holds %d, want 12", n)
	}
	if n := slotCount(t, st, route.SlotCategorization); n != 2 {
		t.Errorf("current_categorization holds %d categories, want 2", n)
	}
	if st.Turns != 1 {
		t.Errorf("turns = %d", st.Turns)
	}
	progress := strings.Join(ce.progress(), "|")
	for _, want := range []string{"thinking", "calling ImageSearch", "ImageSearch returned 12 images", "ImageAnalysis returned 2 categories"} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress %q lacks %q", progress, want)
		}
	}

	// A second turn uses the first turn's slots and sees its history.
	srv.Enqueue(llmtest.Calls(llmtest.Call("ImageAnalysis", map[string]any{"images": "†state.current_image_ids"})), llmtest.Answer("Re-sorted them."))
	_, resp2, _ := ask(t, m, conv, "now categorize the ones from last time again")
	if resp2.State != schemas.ChatCompleted || len(resp2.ToolCalls) != 1 || !resp2.ToolCalls[0].Success {
		t.Fatalf("second turn = %+v", resp2)
	}
	r := srv.Requests()[4]
	if users := r.MessagesOf("user"); len(users) != 2 || users[0].Content != "Find sunset images and organize them into folders" {
		t.Errorf("second turn's first request has user messages %+v, want both turns", users)
	}
	if st := conversation(t, m, conv); st.Turns != 2 {
		t.Errorf("turns = %d, want 2", st.Turns)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestChatToolErrorsReachTheModelAsObservations(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	m.Agent(t, schemas.AgentContract{Name: "Failing", Capability: schemas.CapEvaluation, Description: "Always fails."},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{}, errors.New("disk full")
		}, 1)
	m.Agent(t, schemas.AgentContract{Name: "Slow", Capability: schemas.CapEvaluation, Description: "Never finishes in time.", TimeoutMS: 300},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-ctx.Done()
			time.Sleep(3 * time.Second) // ignores its deadline
			return schemas.AgentResult{}, ctx.Err()
		}, 1)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("NoSuchAgent", nil), llmtest.ToolCall{Name: "ImageSearch", Arguments: `{"query": "sun`}),
		llmtest.Calls(llmtest.Call("Failing", nil)),
		llmtest.Calls(llmtest.Call("Slow", nil)),
		llmtest.Answer("Nothing worked, sorry."),
	)
	chatReplica(t, m, nil, []string{"ImageSearch", "Failing", "Slow"}, chat.WithLLM(newLLM(t, srv)))

	_, resp, _ := ask(t, m, "", "try everything")
	if resp.State != schemas.ChatCompleted || resp.Output != "Nothing worked, sorry." || len(resp.ToolCalls) != 4 {
		t.Fatalf("response = %+v", resp)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("requests = %d", len(reqs))
	}
	obs := toolMessages(reqs[3])
	checks := []struct{ what, want string }{
		{"unknown agent", `unknown agent "NoSuchAgent"`},
		{"malformed JSON", "not a JSON object"},
		{"agent failure", "disk full"},
		{"agent timeout", "timeout"},
	}
	if len(obs) != len(checks) {
		t.Fatalf("observations = %q", obs)
	}
	for i, c := range checks {
		if !strings.Contains(obs[i], c.want) {
			t.Errorf("%s: observation %q lacks %q", c.what, obs[i], c.want)
		}
		if resp.ToolCalls[i].Success || resp.ToolCalls[i].Error == "" {
			t.Errorf("%s: record %+v should be a failure with its error", c.what, resp.ToolCalls[i])
		}
	}
}

func TestChatStepLimit(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "more"}))
	})
	chatReplica(t, m, nil, []string{"ImageSearch"}, chat.WithLLM(newLLM(t, srv)), chat.WithMaxSteps(3))
	_, resp, _ := ask(t, m, "", "search forever")
	if resp.State != schemas.ChatStepLimitReached || resp.Steps != 3 || len(srv.Requests()) != 3 || len(resp.ToolCalls) != 3 {
		t.Fatalf("response = %+v after %d model requests", resp, len(srv.Requests()))
	}
	if !strings.Contains(resp.Output, "step limit") {
		t.Errorf("output %q does not say the step limit ended the turn", resp.Output)
	}
}

func TestChatRetriesRateLimitAndFailsClearlyOnRefusedKey(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	srv := llmtest.New(t, llmtest.RateLimited("0"), llmtest.Answer("hello"), llmtest.Unauthorized())
	chatReplica(t, m, nil, []string{"ImageSearch"}, chat.WithLLM(newLLM(t, srv)))

	_, resp, _ := ask(t, m, "", "hi")
	if resp.State != schemas.ChatCompleted || resp.Output != "hello" || len(srv.Requests()) != 2 {
		t.Fatalf("after a 429: %+v, %d requests", resp, len(srv.Requests()))
	}
	_, resp, _ = ask(t, m, "", "hi again")
	if resp.State != schemas.ChatFailed {
		t.Fatalf("after a 401: %+v", resp)
	}
	for _, want := range []string{srv.URL(), "key was refused"} {
		if !strings.Contains(resp.Error, want) || !strings.Contains(resp.Output, want) {
			t.Errorf("error %q / output %q does not mention %q", resp.Error, resp.Output, want)
		}
	}
}

// searchThenAnswer starts replicas chat replicas on one scripted model that
// searches for the turn's question, then answers "done <question>".
func searchThenAnswer(t *testing.T, m *meshtest.Mesh, replicas int) {
	t.Helper()
	srv := llmtest.New(t)
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Body.Messages
		last := 0
		for i, msg := range msgs {
			if msg.Role == "user" {
				last = i
			}
		}
		q := msgs[last].Content
		for _, msg := range msgs[last:] {
			if msg.Role == "tool" {
				return llmtest.Answer("done " + q)
			}
		}
		return llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": q}))
	})
	for range replicas {
		chatReplica(t, m, nil, []string{"ImageSearch"}, chat.WithLLM(newLLM(t, srv)))
	}
}

func TestChatFiftyConversationsTwoReplicas(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	// Any cross-talk shows in the slots or the answers.
	searchThenAnswer(t, m, 2)

	const n = 50
	type result struct {
		conv, q string
		resp    schemas.ChatResponse
	}
	results := make(chan result, n)
	js := m.Srv.JetStream(t)
	for i := range n {
		conv, q := fmt.Sprintf("conv%02d", i), fmt.Sprintf("q%d:c%02d", i%7+1, i)
		ce := followChat(t, m, conv)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, _, err := client.SendChat(ctx, js, m.Srv.Names(), conv, q, "test"); err != nil {
				t.Error(err)
				results <- result{conv: conv, q: q}
				return
			}
			select {
			case r := <-ce.final:
				results <- result{conv, q, r}
			case <-time.After(45 * time.Second):
				results <- result{conv: conv, q: q}
			}
		}()
	}
	for range n {
		r := <-results
		if r.resp.State != schemas.ChatCompleted || r.resp.Output != "done "+r.q || r.resp.ConversationID != r.conv {
			t.Errorf("%s: response %+v", r.conv, r.resp)
			continue
		}
		st := conversation(t, m, r.conv)
		v := st.Slots[route.SlotImageIDs]
		fc, err := v.Files()
		var want int
		fmt.Sscanf(r.q, "q%d:", &want)
		if err != nil || fc.Count() != want {
			t.Errorf("%s: %d images, want %d (%v)", r.conv, fc.Count(), want, err)
			continue
		}
		prefix := strings.SplitN(r.q, ":", 2)[0] + "-"
		for _, id := range fc.IDs() {
			if !strings.HasPrefix(id, prefix) {
				t.Errorf("%s holds %s from another conversation", r.conv, id)
			}
		}
	}
}

func TestChatResumesTurnOfKilledReplica(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	var executions atomic.Int32
	m.Agent(t, chatSearchContract(), func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		if executions.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		fc := schemas.FromIDs(schemas.ContentImages, "a", "b", "c")
		return meshtest.OK("ImageSearch", "found 3 images", map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}), nil
	}, 2)
	srv := llmtest.New(t, llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"})), llmtest.Answer("found 3"))

	// Replica A takes the turn; its connection dies while the agent works,
	// so it can neither ack the request nor write the turn again.
	ncA := m.Srv.Conn(t)
	chatReplica(t, m, ncA, []string{"ImageSearch"}, chat.WithLLM(newLLM(t, srv)))
	conv := "killed"
	ce := followChat(t, m, conv)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := client.SendChat(ctx, m.Srv.JetStream(t), m.Srv.Names(), conv, "find sunsets", "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the agent never started")
	}
	ncA.Close()

	// Replica B gets the redelivered request and resumes the pending call.
	chatReplica(t, m, nil, []string{"ImageSearch"}, chat.WithLLM(newLLM(t, srv)))
	close(release)
	resp := ce.wait(t, 30*time.Second)
	if resp.State != schemas.ChatCompleted || resp.Output != "found 3" {
		t.Fatalf("response = %+v", resp)
	}
	if n := executions.Load(); n != 1 {
		t.Errorf("the agent ran %d times, want once", n)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (the resumed turn does not think again)", n)
	}
	if c := slotCount(t, conversation(t, m, conv), route.SlotImageIDs); c != 3 {
		t.Errorf("images = %d", c)
	}
}

func TestOfflinePlannerAnswersSeedScenario(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	searched := make(chan string, 4)
	seedAgents(t, m, searched)
	chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"})

	conv, resp, _ := ask(t, m, "", "Find sunset images and organize them into folders")
	if resp.State != schemas.ChatCompleted || resp.Planner != "offline" || resp.Tokens != (schemas.Tokens{}) {
		t.Fatalf("response = %+v", resp)
	}
	if !strings.Contains(resp.Output, "offline planner") || !strings.Contains(resp.Output, "ImageSearch -> ImageAnalysis -> FolderOrganizer") {
		t.Errorf("output %q must say the offline planner answered and what it ran", resp.Output)
	}
	if q := <-searched; q != "sunset" {
		t.Errorf("search query = %q, want sunset", q)
	}
	var agents []string
	for _, tc := range resp.ToolCalls {
		agents = append(agents, tc.Agent)
		if !tc.Success {
			t.Errorf("%s failed: %s", tc.Agent, tc.Error)
		}
	}
	if !slices.Equal(agents, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"}) {
		t.Errorf("ran %v", agents)
	}
	if n := slotCount(t, conversation(t, m, conv), route.SlotCategorization); n != 2 {
		t.Errorf("categories = %d", n)
	}
}

// Several turns of one conversation asked for at once, on two replicas:
// they run one at a time, each answered once, and the conversation records
// each message once.
func TestChatSimultaneousTurnsOfOneConversation(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	searchThenAnswer(t, m, 2)

	const conv, n = "shared", 4
	ce := followChat(t, m, conv)
	js := m.Srv.JetStream(t)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, _, err := client.SendChat(ctx, js, m.Srv.Names(), conv, fmt.Sprintf("q%d:turn", i+1), "test"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	answers := map[string]int{}
	for range n {
		select {
		case r := <-ce.final:
			if r.State != schemas.ChatCompleted {
				t.Errorf("response %+v", r)
			}
			answers[r.Output]++
		case <-time.After(30 * time.Second):
			t.Fatalf("answers so far: %v", answers)
		}
	}
	for i := range n {
		if want := fmt.Sprintf("done q%d:turn", i+1); answers[want] != 1 {
			t.Errorf("%q answered %d times (all: %v)", want, answers[want], answers)
		}
	}
	st := conversation(t, m, conv)
	asked := map[string]int{}
	for _, h := range st.History {
		if h.Kind == "user" {
			asked[h.Text]++
		}
	}
	if st.Turns != n || len(asked) != n {
		t.Errorf("conversation has %d turns and user messages %v, want %d, each once", st.Turns, asked, n)
	}
	for q, k := range asked {
		if k != 1 {
			t.Errorf("%q recorded %d times", q, k)
		}
	}
}
