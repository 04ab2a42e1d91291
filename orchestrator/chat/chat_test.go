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

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

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
		if got := r.ToolNames(); !slices.Equal(got, []string{"FolderOrganizer", "ImageAnalysis", "ImageSearch", chat.AskUserTool}) {
			t.Errorf("request %d tools = %v, want one per live agent and %s", i, got, chat.AskUserTool)
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
		return fixture.OK("ImageSearch", "found 3 images", map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}), nil
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
	// The plan's call ids are the planner's own (plan_<i>): the task ids
	// carry the conversation's tag, so no one can send a task under one
	// before the turn does (docs/security.md).
	for i, tc := range resp.ToolCalls {
		base := fmt.Sprintf("%s-t1-plan_%d-", conv, i)
		if tag, ok := strings.CutPrefix(tc.TaskID, base); !ok || len(tag) != 16 {
			t.Errorf("tool call %d: task id %q, want %s<16-character tag>", i, tc.TaskID, base)
		}
	}
	if n := slotCount(t, conversation(t, m, conv), route.SlotCategorization); n != 2 {
		t.Errorf("categories = %d", n)
	}
}

// When a step of an offline plan finds nothing, the turn says so and the
// rest of the plan does not run on nothing.
func TestOfflinePlannerStopsOnAnEmptyResult(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"})

	_, resp, _ := ask(t, m, "", `Find "q0: nothing" images and organize them into folders`)
	if resp.State != schemas.ChatCompleted || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Agent != "ImageSearch" {
		t.Fatalf("response = %+v", resp)
	}
	for _, want := range []string{"ran ImageSearch.", "ImageSearch found nothing", "ImageAnalysis -> FolderOrganizer had nothing to work on and did not run"} {
		if !strings.Contains(resp.Output, want) {
			t.Errorf("output %q lacks %q", resp.Output, want)
		}
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

// Chat hands a literal value to an agent: the model gives the agent's TEXT
// input as a tool argument (advertised in the tool's parameters), and the
// agent reads it as that input.
func TestChatHandsLiteralValuesToAgents(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	m.Agent(t, schemas.AgentContract{Name: "Shout", Capability: schemas.CapTransformation, Description: "Upper-cases a text.",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Params:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			v, err := ec.Read("text", schemas.TypeText)
			if err != nil {
				return schemas.AgentResult{}, err
			}
			s, err := v.Text()
			if err != nil {
				return schemas.AgentResult{}, err
			}
			return fixture.OK("Shout", "shouted", map[string]schemas.TypedValue{"text": schemas.TextValue(strings.ToUpper(s), "Shout")}), nil
		}, 1)
	srv := llmtest.New(t, llmtest.Calls(llmtest.Call("Shout", map[string]any{"text": "make it loud"})), llmtest.Answer("Done."))
	chatReplica(t, m, nil, []string{"Shout"}, chat.WithLLM(newLLM(t, srv)))

	conv, resp, _ := ask(t, m, "", "shout 'make it loud'")
	if resp.State != schemas.ChatCompleted || len(resp.ToolCalls) != 1 || !resp.ToolCalls[0].Success {
		t.Fatalf("response = %+v", resp)
	}
	if got, _ := conversation(t, m, conv).Slots[route.SlotText].Text(); got != "MAKE IT LOUD" {
		t.Errorf("current_text = %q, want the agent's answer to the literal text", got)
	}
	tool, ok := srv.Requests()[0].Tool("Shout")
	params, _ := json.Marshal(tool.Parameters)
	if !ok || !strings.Contains(string(params), `"text":{"description"`) {
		t.Errorf("Shout's tool parameters = %s, want the text input", params)
	}
}
