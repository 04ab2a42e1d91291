package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func userMsg(parts ...a2a.Part) *a2a.Message {
	return &a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleUser, Parts: parts}
}

func dataPart(v any) a2a.Part {
	b, _ := json.Marshal(v)
	return a2a.Part{Data: b, MediaType: "application/json"}
}

func artifactText(t *testing.T, task a2a.Task, name string) string {
	t.Helper()
	for _, a := range task.Artifacts {
		if a.Name == name && len(a.Parts) == 1 && a.Parts[0].Text != nil {
			return *a.Parts[0].Text
		}
	}
	t.Fatalf("task %s has no text artifact %q: %+v", task.ID, name, task.Artifacts)
	return ""
}

func TestCardsDescribeAgentsAndChat(t *testing.T) {
	r := newRig(t)
	cl, err := a2a.Dial(context.Background(), nil, r.agentURL("TextAgent"))
	if err != nil {
		t.Fatal(err)
	}
	card := cl.Card()
	if card.Name != "TextAgent" || cl.Endpoint() != r.agentURL("TextAgent") {
		t.Fatalf("card %q at endpoint %q", card.Name, cl.Endpoint())
	}
	if len(card.Skills) != 1 || !strings.Contains(card.Skills[0].Description, "- text: TEXT, required: the text to transform (or a text part)") ||
		!strings.Contains(card.Skills[0].Description, `"op"`) {
		t.Fatalf("the skill does not describe the contract: %+v", card.Skills)
	}
	if !card.Capabilities.Streaming || card.SupportedInterfaces[0].ProtocolVersion != "1.0" || card.SupportedInterfaces[0].ProtocolBinding != "JSONRPC" {
		t.Fatalf("interfaces %+v, capabilities %+v", card.SupportedInterfaces, card.Capabilities)
	}
	chatCard, err := a2a.Dial(context.Background(), nil, r.http.URL)
	if err != nil {
		t.Fatal(err)
	}
	if chatCard.Endpoint() != r.http.URL+a2a.PathChat || !strings.Contains(chatCard.Card().Skills[0].Description, "- TextAgent: Transforms text") {
		t.Fatalf("chat card at %s: %+v", chatCard.Endpoint(), chatCard.Card().Skills)
	}
	resp, err := http.Get(r.agentURL("NoSuchAgent") + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("card of an unknown agent: HTTP %d", resp.StatusCode)
	}
}

func TestSendMessageRunsAMeshTask(t *testing.T) {
	r := newRig(t)
	cl, err := a2a.Dial(context.Background(), nil, r.agentURL("TextAgent")+"/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := cl.SendMessage(ctx, a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("hello mesh"), dataPart(map[string]any{"params": map[string]any{"op": "reverse"}}))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	if task == nil || task.Status.State != a2a.StateCompleted {
		t.Fatalf("SendMessage answered %+v", res)
	}
	if got := artifactText(t, *task, "text"); got != "hsem olleh" {
		t.Fatalf("artifact text %q", got)
	}
	if len(task.History) != 2 || task.History[0].Role != a2a.RoleUser || task.History[1].Role != a2a.RoleAgent || task.ContextID == "" {
		t.Fatalf("history %+v, context %q", task.History, task.ContextID)
	}
	got, err := cl.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.StateCompleted || got.ID != task.ID || len(got.Artifacts) != 1 {
		t.Fatalf("GetTask %+v", got)
	}
	// A data part can name the input too, and the result says the same.
	res, err = cl.SendMessage(ctx, a2a.SendMessageRequest{Message: userMsg(dataPart(map[string]any{"text": "a b c", "params": map[string]any{"op": "wordcount"}}))})
	if err != nil {
		t.Fatal(err)
	}
	if got := artifactText(t, *res.Task, "text"); got != "3" {
		t.Fatalf("wordcount artifact %q", got)
	}
}

func TestStreamingShowsTheTaskThenItsOutputs(t *testing.T) {
	r := newRig(t)
	evs := stream(t, r.agentURL("TextAgent"), a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("stream me"))})
	var kinds []string
	for _, ev := range evs {
		switch {
		case ev.Task != nil:
			kinds = append(kinds, "task:"+string(ev.Task.Status.State))
		case ev.ArtifactUpdate != nil:
			kinds = append(kinds, "artifact:"+*ev.ArtifactUpdate.Artifact.Parts[0].Text)
		case ev.StatusUpdate != nil:
			kinds = append(kinds, "status:"+string(ev.StatusUpdate.Status.State))
		}
	}
	want := []string{"task:TASK_STATE_SUBMITTED", "artifact:STREAM ME", "status:TASK_STATE_COMPLETED"}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Fatalf("events %v, want %v", kinds, want)
	}
}

func TestRefusedRequestsSayWhy(t *testing.T) {
	r := newRig(t)
	url := r.agentURL("TextAgent")
	send := func(m *a2a.Message) string {
		return rpcBody(a2a.MethodSendMessage, a2a.SendMessageRequest{Message: m})
	}
	textOnly := send(userMsg(a2a.TextPart("x")))
	agentRole := userMsg(a2a.TextPart("x"))
	agentRole.Role = a2a.RoleAgent
	cases := []struct {
		name, version, body string
		code                int
		says                string
	}{
		{"1.0 method without a version header (so 0.3)", "", textOnly, a2a.CodeMethodNotFound, "A2A-Version: 1.0"},
		{"1.0 method in 0.3", "0.3", textOnly, a2a.CodeMethodNotFound, "message/send"},
		{"version 2.0", "2.0", textOnly, a2a.CodeVersionNotSupported, `"2.0"`},
		{"v0.3 method", "1.0", rpcBody("message/send", map[string]any{}), a2a.CodeMethodNotFound, "SendMessage"},
		{"not JSON", "1.0", "{", a2a.CodeParseError, "not JSON"},
		{"not 2.0", "1.0", `{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{}}`, a2a.CodeInvalidRequest, `"2.0"`},
		{"params an array", "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[]}`, a2a.CodeInvalidParams, "object"},
		{"unknown task", "1.0", rpcBody(a2a.MethodGetTask, map[string]any{"id": "nope"}), a2a.CodeTaskNotFound, `"nope"`},
		{"missing input", "1.0", send(userMsg(dataPart(map[string]any{"params": map[string]any{"op": "upper"}}))), a2a.CodeInvalidParams, "needs input text (TEXT)"},
		{"bad param", "1.0", send(userMsg(a2a.TextPart("x"), dataPart(map[string]any{"params": map[string]any{"op": "sideways"}}))), a2a.CodeInvalidParams, "/op: value must be one of"},
		{"unknown data key", "1.0", send(userMsg(dataPart(map[string]any{"txt": "x"}))), a2a.CodeInvalidParams, `"txt"`},
		{"file by URL", "1.0", send(userMsg(a2a.TextPart("x"), a2a.Part{URL: "https://example.com/a.png"})), a2a.CodeContentType, "raw part"},
		{"two contents in a part", "1.0", send(userMsg(a2a.Part{URL: "u", Data: []byte(`{}`)})), a2a.CodeInvalidParams, "exactly one"},
		{"agent role", "1.0", send(agentRole), a2a.CodeInvalidParams, "ROLE_USER"},
		{"no parts", "1.0", send(userMsg()), a2a.CodeInvalidParams, "no parts"},
		{"push config", "1.0", rpcBody("CreateTaskPushNotificationConfig", map[string]any{}), a2a.CodePushNotSupported, "not offered"},
		{"extended card", "1.0", rpcBody("GetExtendedAgentCard", map[string]any{}), a2a.CodeExtendedCard, "no extended agent card"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, status := post(t, url, c.version, c.body)
			if status != http.StatusOK || rep.Error == nil {
				t.Fatalf("HTTP %d, reply %+v", status, rep)
			}
			if rep.Error.Code != c.code || !strings.Contains(rep.Error.Message, c.says) {
				t.Fatalf("error %d %q, want %d saying %q", rep.Error.Code, rep.Error.Message, c.code, c.says)
			}
		})
	}
	if _, status := post(t, r.agentURL("NoSuchAgent"), "1.0", textOnly); status != http.StatusNotFound {
		t.Fatalf("an unknown agent's endpoint: HTTP %d", status)
	}
}

func TestCancelStopsTheAgent(t *testing.T) {
	r := newRig(t)
	cl, err := a2a.Dial(context.Background(), nil, r.agentURL("TextAgent"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := cl.SendMessage(ctx, a2a.SendMessageRequest{
		Message:       userMsg(a2a.TextPart("slow"), dataPart(map[string]any{"params": map[string]any{"delay_ms": 60000}})),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status.State != a2a.StateSubmitted {
		t.Fatalf("returnImmediately: state %s", res.Task.Status.State)
	}
	// One CancelTask is enough, even if the agent has not taken the task yet.
	task, err := cl.CancelTask(ctx, res.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.StateCanceled {
		t.Fatalf("after CancelTask: %s", task.Status.State)
	}
	_, err = cl.CancelTask(ctx, res.Task.ID)
	if !errorsIs(err, a2a.ErrTaskNotCancelable) {
		t.Fatalf("cancelling a canceled task: %v", err)
	}
}

// fileAgent reports how many files it got and the first one's content.
func fileAgent(res *resolvers.ObjectStore) agents.Agent {
	return agents.Func(schemas.AgentContract{
		Name: "FileReader", Version: "1.0.0", Capability: schemas.CapAnalysis, Description: "Reads files.",
		Inputs:  []schemas.TypedInput{{Name: "files", DataType: schemas.TypeFileIDs, Required: true, ContentTypeHint: "documents"}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		fc, err := ec.Files("files")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		b, err := res.Resolve(ctx, fc.IDs()[0])
		if err != nil {
			return schemas.AgentResult{}, err
		}
		out := fmt.Sprintf("%d files, first: %s", fc.Count(), b)
		return schemas.AgentResult{Success: true, Summary: "read", Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(out, "FileReader")}}, nil
	})
}

func TestFilePartsAreStoredAndPassedByID(t *testing.T) {
	srvRig := newRigWithFiles(t)
	cl, err := a2a.Dial(context.Background(), nil, srvRig.agentURL("FileReader"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.SendMessage(context.Background(), a2a.SendMessageRequest{Message: userMsg(
		a2a.Part{Raw: []byte("first file"), Filename: "a.txt", MediaType: "text/plain"},
		a2a.Part{Raw: []byte("second file"), Filename: "b.txt", MediaType: "text/plain"},
	)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("state %s: %+v", res.Task.Status.State, res.Task.Status.Message)
	}
	if got := artifactText(t, *res.Task, "text"); got != "2 files, first: first file" {
		t.Fatalf("artifact %q", got)
	}
	if h := res.Task.History[0].Parts[0]; h.Raw != nil || h.Text == nil || !strings.Contains(*h.Text, "a.txt") {
		t.Fatalf("the history keeps file bytes or loses the file's name: %+v", h)
	}
}

func TestChatTurnIsATaskInItsConversation(t *testing.T) {
	r := newRig(t)
	r.withChat(t, nil, llmtest.Answer("All done: nothing to do."), llmtest.Answer("Still nothing."))
	cl, err := a2a.Dial(context.Background(), nil, r.http.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := cl.SendMessage(ctx, a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("say hello"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	if task.Status.State != a2a.StateCompleted || artifactText(t, *task, "answer") != "All done: nothing to do." {
		t.Fatalf("chat task %+v", task)
	}
	next := userMsg(a2a.TextPart("and now?"))
	next.ContextID = task.ContextID
	res, err = cl.SendMessage(ctx, a2a.SendMessageRequest{Message: next})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.ContextID != task.ContextID || res.Task.ID == task.ID || artifactText(t, *res.Task, "answer") != "Still nothing." {
		t.Fatalf("second turn %+v", res.Task)
	}
	rep, _ := post(t, r.http.URL+a2a.PathChat, "1.0", rpcBody(a2a.MethodSendMessage, a2a.SendMessageRequest{Message: userMsg(dataPart(map[string]any{"x": 1}))}))
	if rep.Error == nil || rep.Error.Code != a2a.CodeContentType {
		t.Fatalf("a data part to the chat: %+v", rep)
	}
}

// A turn that stops at its step limit waits for input; the next message
// naming the task goes on in the same conversation, as the same task.
func TestChatStepLimitAsksForInput(t *testing.T) {
	r := newRig(t)
	r.withChat(t, []chat.Option{chat.WithMaxSteps(1)},
		llmtest.Calls(llmtest.Call("TextAgent", map[string]any{"text": "hi"})),
		llmtest.Answer("Finished now."))
	cl, err := a2a.Dial(context.Background(), nil, r.http.URL+a2a.PathChat+"/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := cl.SendMessage(ctx, a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("shout hi"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	if task.Status.State != a2a.StateInputRequired || task.Status.Message == nil || !strings.Contains(*task.Status.Message.Parts[0].Text, "step limit") {
		t.Fatalf("after the step limit: %+v", task.Status)
	}
	next := userMsg(a2a.TextPart("go on"))
	next.TaskID = task.ID
	res, err = cl.SendMessage(ctx, a2a.SendMessageRequest{Message: next})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.ID != task.ID || res.Task.ContextID != task.ContextID || res.Task.Status.State != a2a.StateCompleted ||
		artifactText(t, *res.Task, "answer") != "Finished now." || len(res.Task.History) != 4 {
		t.Fatalf("the continued task: %+v", res.Task)
	}
	_, err = cl.SendMessage(ctx, a2a.SendMessageRequest{Message: next})
	if !errorsIs(err, a2a.ErrUnsupported) {
		t.Fatalf("a message to the completed task: %v", err)
	}
}

// A remote A2A agent (here: the mesh's own TextAgent through the bridge)
// works as a mesh agent, and a refusal of the remote keeps its code.
func TestRemoteAgentForwardsOverA2A(t *testing.T) {
	r := newRigWithFiles(t)
	ctx := context.Background()
	rem, err := a2a.NewRemote(ctx, r.agentURL("TextAgent"), a2a.WithRemoteName("Shouter"))
	if err != nil {
		t.Fatal(err)
	}
	if c := rem.Contract(); c.Name != "Shouter" || c.Version != "1.0.0" || !strings.Contains(c.Description, "Transforms text") {
		t.Fatalf("contract %+v", c)
	}
	ec := schemas.ContextFromTask(schemas.DefaultRegistry(), schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("quiet words", "test")}})
	res, err := rem.Execute(ctx, ec)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Outputs["text"].Text(); !res.Success || got != "QUIET WORDS" {
		t.Fatalf("result %+v", res)
	}
	// With files: the task's files go as raw parts, and the bridge on the
	// other side stores them again for FileReader.
	store := resolvers.NewObjectStore(r.res.Files)
	ref, err := store.Store(ctx, strings.NewReader("remote bytes"), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := a2a.NewRemote(ctx, r.agentURL("FileReader")+"/.well-known/agent-card.json", a2a.WithRemoteFiles(store))
	if err != nil {
		t.Fatal(err)
	}
	withFiles := schemas.ContextFromTask(schemas.DefaultRegistry(), schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{
		"files": schemas.FilesValue(schemas.FromIDs("", ref.ID), "test")}})
	res, err = files.Execute(ctx, withFiles)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Outputs["text"].Text(); got != "1 files, first: remote bytes" {
		t.Fatalf("FileReader through the remote: %q", got)
	}
	_, err = files.Execute(ctx, ec)
	if !errorsIs(err, a2a.ErrRemote) || !errorsIs(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "needs input files") {
		t.Fatalf("a remote refusal: %v", err)
	}
	if _, err := a2a.NewRemote(ctx, r.http.URL+"/nowhere/"); !errorsIs(err, a2a.ErrNoCard) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("no card: %v", err)
	}
}

func TestListTasksAndSubscribe(t *testing.T) {
	r := newRig(t)
	url := r.agentURL("TextAgent")
	cl, err := a2a.Dial(context.Background(), nil, url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range []string{"one", "two"} {
		if _, err := cl.SendMessage(ctx, a2a.SendMessageRequest{Message: userMsg(a2a.TextPart(s))}); err != nil {
			t.Fatal(err)
		}
	}
	slow, err := cl.SendMessage(ctx, a2a.SendMessageRequest{
		Message:       userMsg(a2a.TextPart("slow"), dataPart(map[string]any{"params": map[string]any{"delay_ms": 60000}})),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	list := func(params map[string]any) a2a.ListTasksResponse {
		t.Helper()
		rep, _ := post(t, url, "1.0", rpcBody(a2a.MethodListTasks, params))
		if rep.Error != nil {
			t.Fatalf("ListTasks %v: %v", params, rep.Error)
		}
		var res a2a.ListTasksResponse
		if err := json.Unmarshal(rep.Result, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	page := list(map[string]any{"pageSize": 2})
	if page.TotalSize != 3 || len(page.Tasks) != 2 || page.NextPageToken == "" || page.Tasks[0].ID != slow.Task.ID || page.Tasks[0].Artifacts != nil {
		t.Fatalf("first page: %+v", page)
	}
	rest := list(map[string]any{"pageSize": 2, "pageToken": page.NextPageToken})
	if len(rest.Tasks) != 1 || rest.NextPageToken != "" {
		t.Fatalf("second page: %+v", rest)
	}
	done := list(map[string]any{"status": "TASK_STATE_COMPLETED", "includeArtifacts": true})
	if done.TotalSize != 2 || len(done.Tasks[0].Artifacts) != 1 {
		t.Fatalf("completed: %+v", done)
	}
	if rep, _ := post(t, r.http.URL+a2a.PathChat, "1.0", rpcBody(a2a.MethodGetTask, map[string]any{"id": slow.Task.ID})); rep.Error == nil || rep.Error.Code != a2a.CodeTaskNotFound {
		t.Fatalf("an agent's task at the chat's endpoint: %+v", rep)
	}
	if rep, _ := post(t, url, "1.0", rpcBody(a2a.MethodSubscribeToTask, map[string]any{"id": done.Tasks[0].ID})); rep.Error == nil || rep.Error.Code != a2a.CodeUnsupported {
		t.Fatalf("subscribing to an ended task: %+v", rep)
	}
	// Subscribe to the slow task, then cancel it: the stream ends with it.
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _ = cl.CancelTask(context.Background(), slow.Task.ID)
	}()
	evs := streamMethod(t, url, a2a.MethodSubscribeToTask, map[string]any{"id": slow.Task.ID})
	last := evs[len(evs)-1]
	if evs[0].Task == nil || evs[0].Task.ID != slow.Task.ID || last.StatusUpdate == nil || last.StatusUpdate.Status.State != a2a.StateCanceled {
		t.Fatalf("subscription events: %+v", evs)
	}
}

// A task that runs past its time budget fails, with the mesh's code.
func TestTimeoutFailsTheTask(t *testing.T) {
	slow := func(*bus.Resources) agents.Agent {
		return agents.Func(schemas.AgentContract{
			Name: "Sleeper", Version: "1.0.0", Capability: schemas.CapGeneration, Description: "Sleeps.", TimeoutMS: 300,
			Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText}},
			Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
		}, func(ctx context.Context, _ *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-ctx.Done()
			return schemas.AgentResult{}, context.Cause(ctx)
		})
	}
	r := newRig(t, slow)
	cl, err := a2a.Dial(context.Background(), nil, r.agentURL("Sleeper"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.SendMessage(context.Background(), a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("zzz"))})
	if err != nil {
		t.Fatal(err)
	}
	st := res.Task.Status
	if st.State != a2a.StateFailed || st.Message == nil || st.Message.Metadata["code"] != schemas.CodeTimeout {
		t.Fatalf("status %+v", st)
	}
}

// As a client of a secure mesh, the bridge has results sent where a
// client may read them.
func TestClientIdentityGetsResultsOnItsSubjects(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	h, err := a2a.NewHandler(ctx, r.srv.Conn(t), a2a.WithClient("alice"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	cl, err := a2a.Dial(ctx, nil, hs.URL+a2a.PathAgents+"/TextAgent")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.SendMessage(ctx, a2a.SendMessageRequest{Message: userMsg(a2a.TextPart("for alice"))})
	if err != nil || res.Task.Status.State != a2a.StateCompleted {
		t.Fatalf("%v %+v", err, res.Task)
	}
	js := r.srv.JetStream(t)
	st, err := js.Stream(ctx, r.srv.Names().ResultsStream())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetLastMsgForSubject(ctx, r.srv.Names().ClientResult("TextAgent", "alice", res.Task.ID)); err != nil {
		t.Fatalf("no result on alice's subject: %v", err)
	}
}
