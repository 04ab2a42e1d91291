package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents/builtin/analysis"
	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
)

// testMesh is a real mesh in-process for one test: an embedded NATS server,
// the built-in TextAgent, ImageSearchAgent, AnalysisAgent and FolderAgent
// on the agent runtime, one orchestrator replica with the offline chat
// planner, the sample images stored, and a gateway served by httptest.
type testMesh struct {
	srv   *bustest.Server
	res   *bus.Resources
	gw    *Gateway
	http  *httptest.Server
	spec  *apiSpec
	files map[string]string // sample name -> file id
}

// testValidator checks pipelines as the orchestrator does.
var testValidator = WithValidator(orchestrator.ValidatePipeline)

func newTestMesh(t testing.TB, opts ...Option) *testMesh {
	t.Helper()
	return newTestMeshChat(t, nil, opts...)
}

// newTestMeshChat is newTestMesh with the orchestrator's chat configured
// by chatOpts (chat.WithLLM for a scripted model).
func newTestMeshChat(t testing.TB, chatOpts []chat.Option, opts ...Option) *testMesh {
	t.Helper()
	mm := meshtest.New(t)
	m := &testMesh{srv: mm.Srv, res: mm.Res, spec: loadSpec(t)}
	builtins := []string{text.Name, imagesearch.Name, analysis.Name, folder.Name}
	m.files = mm.Builtins(t, samples.Images(), builtins...)
	mm.Orchestrator(t, nil, orchestrator.WithChat(chatOpts...))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := New(ctx, mm.Srv.Conn(t), append([]Option{testValidator}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	m.gw = gw
	m.http = httptest.NewServer(gw)
	t.Cleanup(m.http.Close)
	for _, name := range builtins {
		if err := gw.def.reg.Wait(ctx, name, 1); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// response is one answer of the API, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request to the gateway and checks the request and the answer
// against the OpenAPI document (status, headers, body schema).
func (m *testMesh) do(t *testing.T, method, path, contentType string, body []byte, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, m.http.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
		if header[i] == "Host" { // the client sends req.Host
			req.Host = header[i+1]
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: got}
	m.spec.check(t, req, body, r)
	return r
}

func (m *testMesh) getJSON(t *testing.T, path string) response {
	t.Helper()
	return m.do(t, "GET", path, "", nil)
}

func (m *testMesh) postJSON(t *testing.T, path, body string) response {
	t.Helper()
	return m.do(t, "POST", path, "application/json", []byte(body))
}
