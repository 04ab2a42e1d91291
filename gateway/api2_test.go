package gateway

import (
	"bytes"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestChatAPI(t *testing.T) {
	m := newTestMesh(t)
	r := m.postJSON(t, "/api/chat", `{"message":"Find sunset images and organize them into folders"}`)
	var acc ChatAccepted
	decode(t, r, &acc)
	if r.status != 202 || acc.ConversationID == "" || acc.RequestID == "" {
		t.Fatalf("chat: %d %s", r.status, clip(r.body))
	}
	events := m.openSSE(t, "/api/conversations/"+acc.ConversationID+"/events")
	answer := waitEvent(t, events, "io.agentmesh.chat.responded", nil)
	if dataOf(answer)["state"] != "completed" {
		t.Fatalf("answer: %v", answer.Data)
	}

	r = m.getJSON(t, "/api/conversations/"+acc.ConversationID)
	var conv Conversation
	decode(t, r, &conv)
	if len(conv.Turns) != 1 || conv.Turns[0].Message != "Find sunset images and organize them into folders" {
		t.Fatalf("conversation: %s", clip(r.body))
	}
	calls := conv.Turns[0].ToolCalls
	if len(calls) != 3 || calls[2].Agent != "FolderAgent" || calls[2].Arguments == "" || len(calls[0].Outputs) == 0 {
		t.Fatalf("tool calls: %+v", calls)
	}
	r = m.getJSON(t, "/api/conversations")
	var list []map[string]any
	decode(t, r, &list)
	if len(list) != 1 || list[0]["id"] != acc.ConversationID {
		t.Fatalf("conversations: %s", clip(r.body))
	}

	// A second turn continues the conversation.
	r = m.postJSON(t, "/api/chat", `{"conversation_id":"`+acc.ConversationID+`","message":"Find sunset images"}`)
	if r.status != 202 {
		t.Fatalf("second turn: %d %s", r.status, clip(r.body))
	}

	wantError(t, "blank message", m.postJSON(t, "/api/chat", `{"message":"  "}`), 400, schemas.CodeInvalidRequest)
	wantError(t, "no message", m.postJSON(t, "/api/chat", `{}`), 400, schemas.CodeInvalidRequest)
	wantError(t, "huge message", m.postJSON(t, "/api/chat", `{"message":"`+strings.Repeat("a", 70<<10)+`"}`), 413, schemas.CodeTooLarge)
	wantError(t, "unknown conversation", m.postJSON(t, "/api/chat", `{"conversation_id":"nope","message":"hi"}`), 404, schemas.CodeNotFound)
	wantError(t, "new over an existing one", m.postJSON(t, "/api/chat", `{"conversation_id":"`+acc.ConversationID+`","new":true,"message":"hi"}`), 400, schemas.CodeInvalidID)
	wantError(t, "new without an id", m.postJSON(t, "/api/chat", `{"new":true,"message":"hi"}`), 400, schemas.CodeInvalidRequest)
	wantError(t, "bad id", m.postJSON(t, "/api/chat", `{"conversation_id":"a b","message":"hi"}`), 400, schemas.CodeInvalidID)
	wantError(t, "unknown conversation", m.getJSON(t, "/api/conversations/nope"), 404, schemas.CodeNotFound)
	wantError(t, "bad conversation id", m.getJSON(t, "/api/conversations/a.b"), 400, schemas.CodeInvalidID)
	wantError(t, "bad events id", m.getJSON(t, "/api/conversations/a.b/events"), 400, schemas.CodeInvalidID)
}

func TestFilesAPI(t *testing.T) {
	m := newTestMesh(t)
	r := m.getJSON(t, "/api/files?type=images")
	var refs []schemas.FileRef
	decode(t, r, &refs)
	if len(refs) != len(m.files) {
		t.Fatalf("images: %d, want %d", len(refs), len(m.files))
	}
	r = m.getJSON(t, "/api/files?type=documents")
	decode(t, r, &refs)
	if len(refs) != 0 {
		t.Fatalf("documents: %d, want none", len(refs))
	}

	r = m.do(t, "POST", "/api/files?name=notes.txt&folder=inbox&tag=a&tag=b", "text/plain", []byte("hello files"))
	var ref schemas.FileRef
	decode(t, r, &ref)
	if r.status != 201 || ref.ID == "" || ref.Size != 11 || ref.Filename != "notes.txt" || ref.Metadata["folder"] != "inbox" || ref.Metadata["tags"] != "a,b" {
		t.Fatalf("put: %d %s", r.status, clip(r.body))
	}
	r = m.getJSON(t, "/api/files?folder=inbox")
	decode(t, r, &refs)
	if len(refs) != 1 || refs[0].ID != ref.ID {
		t.Fatalf("folder inbox: %s", clip(r.body))
	}
	r = m.getJSON(t, "/api/files/"+ref.ID)
	var got schemas.FileRef
	decode(t, r, &got)
	if got.ID != ref.ID || got.SHA256 == "" {
		t.Fatalf("metadata: %s", clip(r.body))
	}
	r = m.getJSON(t, "/api/files/"+ref.ID+"/content")
	if r.status != 200 || string(r.body) != "hello files" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("content: %d %q %s", r.status, r.body, r.header.Get("Content-Type"))
	}
	r = m.do(t, "GET", "/api/files/"+ref.ID+"/content", "", nil, "If-None-Match", r.header.Get("ETag"))
	if r.status != 304 {
		t.Fatalf("If-None-Match: %d", r.status)
	}
	wantError(t, "thumbnail of text", m.getJSON(t, "/api/files/"+ref.ID+"/content?thumb=1"), 400, schemas.CodeInvalidInput)

	// Multipart, as a browser's form sends it.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("comment", "ignored")
	fw, _ := mw.CreateFormFile("file", "dir/photo.bin")
	_, _ = fw.Write([]byte{1, 2, 3})
	_ = mw.Close()
	r = m.do(t, "POST", "/api/files", mw.FormDataContentType(), body.Bytes())
	decode(t, r, &ref)
	if r.status != 201 || ref.Filename != "photo.bin" || ref.Size != 3 {
		t.Fatalf("multipart put: %d %s", r.status, clip(r.body))
	}

	// A thumbnail of a sample image is a small image of the same shape.
	id := m.files[firstKey(m.files)]
	r = m.getJSON(t, "/api/files/"+id+"/content?thumb=1")
	img, _, err := image.Decode(bytes.NewReader(r.body))
	if r.status != 200 || err != nil {
		t.Fatalf("thumbnail: %d %v", r.status, err)
	}
	if b := img.Bounds(); b.Dx() > thumbSize || b.Dy() > thumbSize || max(b.Dx(), b.Dy()) != thumbSize {
		t.Fatalf("thumbnail is %v", b)
	}

	wantError(t, "no name", m.do(t, "POST", "/api/files", "text/plain", []byte("x")), 400, schemas.CodeInvalidInput)
	wantError(t, "empty file", m.do(t, "POST", "/api/files?name=e.txt", "text/plain", nil), 400, schemas.CodeInvalidInput)
	var nofile bytes.Buffer
	mw = multipart.NewWriter(&nofile)
	_ = mw.WriteField("other", "x")
	_ = mw.Close()
	wantError(t, "multipart without file", m.do(t, "POST", "/api/files", mw.FormDataContentType(), nofile.Bytes()), 400, schemas.CodeInvalidInput)
	wantError(t, "unknown file", m.getJSON(t, "/api/files/f-nope"), 404, schemas.CodeNotFound)
	wantError(t, "unknown content", m.getJSON(t, "/api/files/f-nope/content"), 404, schemas.CodeNotFound)
	wantError(t, "collection object", m.getJSON(t, "/api/files/collections%2Fabc"), 400, schemas.CodeInvalidInput)
	wantError(t, "bad thumb", m.getJSON(t, "/api/files/"+id+"/content?thumb=big"), 400, schemas.CodeInvalidRequest)
}

func firstKey(m map[string]string) string {
	best := ""
	for k := range m {
		if best == "" || k < best {
			best = k
		}
	}
	return best
}

// TestTwoGateways serves one mesh with two gateways: what one accepts,
// the other shows, since neither keeps state of its own.
func TestTwoGateways(t *testing.T) {
	m := newTestMesh(t)
	ctx := t.Context()
	gw2, err := New(ctx, m.srv.Conn(t), testValidator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw2.Close)
	other := &testMesh{spec: m.spec, gw: gw2, http: httptest.NewServer(gw2)}
	t.Cleanup(other.http.Close)

	events := other.openSSE(t, "/api/runs/two-1/events")
	yaml := "name: two\nsteps:\n  - {id: a, agent: TextAgent, params: {op: upper}, inputs: {text: \"text:two gateways\"}}\n"
	if r := m.do(t, "POST", "/api/pipelines?run_id=two-1", "application/yaml", []byte(yaml)); r.status != 202 {
		t.Fatalf("submit on the first: %d %s", r.status, clip(r.body))
	}
	first := waitEvent(t, events, "io.agentmesh.pipeline.step.started", nil)
	second := nextEvent(t, events)
	waitEvent(t, events, "io.agentmesh.pipeline.completed", nil)

	// A reconnection resumes after the last event the browser saw.
	resumed := m.openSSE(t, "/api/runs/two-1/events", "Last-Event-ID", first.ID)
	if next := nextEvent(t, resumed); next.ID != second.ID {
		t.Fatalf("after Last-Event-ID %s came %s %s, want %s %s", first.ID, next.Type, next.ID, second.Type, second.ID)
	}
	var run struct {
		Status string `json:"status"`
	}
	decode(t, other.getJSON(t, "/api/runs/two-1"), &run)
	if run.Status != "completed" {
		t.Fatalf("the second gateway shows the run %s", run.Status)
	}
}

// TestUploadTooLarge sends files over the upload limit, raw and in a form:
// each is refused with too_large and nothing is stored.
func TestUploadTooLarge(t *testing.T) {
	m := newTestMesh(t, WithMaxUpload(64<<10))
	before := len(m.files)
	big := bytes.Repeat([]byte("x"), 200<<10)
	wantError(t, "raw upload", m.do(t, "POST", "/api/files?name=big.txt", "text/plain", big), 413, schemas.CodeTooLarge)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "big.bin")
	_, _ = fw.Write(big)
	_ = mw.Close()
	wantError(t, "form upload", m.do(t, "POST", "/api/files", mw.FormDataContentType(), body.Bytes()), 413, schemas.CodeTooLarge)
	var refs []schemas.FileRef
	decode(t, m.getJSON(t, "/api/files"), &refs)
	if len(refs) != before {
		t.Fatalf("%d files after refused uploads, want %d", len(refs), before)
	}
	if r := m.do(t, "POST", "/api/files?name=small.txt", "text/plain", big[:1000]); r.status != 201 {
		t.Fatalf("a file under the limit: %d %s", r.status, clip(r.body))
	}
}

// TestUploadSniffsGenericType uploads files as curl and browsers send them
// when they do not know the type (curl's default form encoding, a form
// part's application/octet-stream, no type at all): each is stored with the
// type its bytes and name say, so a search by kind finds it. A type the
// sender does know is kept.
func TestUploadSniffsGenericType(t *testing.T) {
	m := newTestMesh(t)
	jpeg := samples.Images()[0].Content
	upload := func(name, contentType string, content []byte) schemas.FileRef {
		t.Helper()
		var r response
		if contentType == "multipart" {
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			fw, _ := mw.CreateFormFile("file", name) // the part says application/octet-stream
			_, _ = fw.Write(content)
			_ = mw.Close()
			r = m.do(t, "POST", "/api/files", mw.FormDataContentType(), body.Bytes())
		} else {
			r = m.do(t, "POST", "/api/files?name="+name, contentType, content)
		}
		var ref schemas.FileRef
		decode(t, r, &ref)
		if r.status != 201 {
			t.Fatalf("upload %s as %q: %d %s", name, contentType, r.status, clip(r.body))
		}
		return ref
	}
	tests := []struct {
		name, contentType string
		content           []byte
		want              string // media type without parameters
		kind              string // the ?type= that lists it
	}{
		{"curl.jpg", "application/x-www-form-urlencoded", jpeg, "image/jpeg", "images"},
		{"curl.txt", "application/x-www-form-urlencoded", []byte("a plain note about sunsets\n"), "text/plain", "documents"},
		{"raw.bin", "application/octet-stream", jpeg, "image/jpeg", "images"},
		{"none.md", "", []byte("# Notes\n\nabout the forest\n"), "text/markdown", "documents"},
		{"form.jpg", "multipart", jpeg, "image/jpeg", "images"},
		{"form.pdf", "multipart", samples.PDF("Report", "a one-page report"), "application/pdf", "documents"},
		{"kept.csv", "text/csv", []byte("a,b\n1,2\n"), "text/csv", "documents"},
	}
	for _, tt := range tests {
		ref := upload(tt.name, tt.contentType, tt.content)
		if mt, _, _ := strings.Cut(ref.MediaType, ";"); mt != tt.want {
			t.Errorf("%s sent as %q is stored as %q, want %s", tt.name, tt.contentType, ref.MediaType, tt.want)
		}
		var refs []schemas.FileRef
		decode(t, m.getJSON(t, "/api/files?type="+tt.kind), &refs)
		found := false
		for _, r := range refs {
			found = found || r.ID == ref.ID
		}
		if !found {
			t.Errorf("%s sent as %q is not among the %s", tt.name, tt.contentType, tt.kind)
		}
	}
}
