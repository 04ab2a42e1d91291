package a2a_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
)

// rig is a provisioned embedded mesh with agents running in-process and
// the A2A handler on a real HTTP server.
type rig struct {
	mesh *meshtest.Mesh
	srv  *bustest.Server
	res  *bus.Resources
	h    *a2a.Handler
	http *httptest.Server
}

// newRig starts the mesh with TextAgent and the extra agents (made once
// the mesh is provisioned), and serves the handler once it sees them all.
func newRig(t testing.TB, extraFns ...func(*bus.Resources) agents.Agent) *rig {
	t.Helper()
	m := meshtest.New(t)
	var extra []agents.Agent
	for _, fn := range extraFns {
		extra = append(extra, fn(m.Res))
	}
	for _, ag := range append([]agents.Agent{text.New()}, extra...) {
		m.Run(t, ag)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h, err := a2a.NewHandler(ctx, m.Srv.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	r := &rig{mesh: m, srv: m.Srv, res: m.Res, h: h, http: hs}
	for _, ag := range extra {
		r.waitCard(t, ag.Contract().Name)
	}
	r.waitCard(t, text.Name)
	return r
}

// withChat runs an orchestrator replica whose chat asks the scripted LLM.
func (r *rig) withChat(t *testing.T, opts []chat.Option, replies ...llmtest.Reply) *llmtest.Server {
	t.Helper()
	ls := llmtest.New(t, replies...)
	lc, err := llm.New(ls.Config())
	if err != nil {
		t.Fatal(err)
	}
	r.mesh.Orchestrator(t, nil, orchestrator.WithChat(append(opts, chat.WithLLM(lc))...))
	return ls
}

// waitCard waits until the agent's card is served.
func (r *rig) waitCard(t testing.TB, agent string) {
	t.Helper()
	fixture.Eventually(t, "the card of "+agent, func() bool {
		resp, err := http.Get(r.agentURL(agent) + "/.well-known/agent-card.json")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func (r *rig) agentURL(agent string) string { return r.http.URL + a2a.PathAgents + "/" + agent }

// rpcReply is a decoded JSON-RPC response.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *a2a.RPCError   `json:"error"`
}

// post sends body to url with the A2A-Version header version ("" for
// none) and decodes the JSON-RPC response.
func post(t *testing.T, url, version, body string) (rpcReply, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set(a2a.HeaderVersion, version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var rep rpcReply
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatalf("response is not JSON: %v\n%s", err, raw)
		}
	}
	return rep, resp.StatusCode
}

// rpcBody is a JSON-RPC request with id 1.
func rpcBody(method string, params any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	return string(b)
}

// stream posts a SendStreamingMessage and returns the results of its
// events in order.
func stream(t *testing.T, url string, params any) []a2a.StreamResponse {
	t.Helper()
	return streamMethod(t, url, a2a.MethodSendStreamingMessage, params)
}

// streamMethod posts a streaming method and returns the results of its
// events in order.
func streamMethod(t *testing.T, url, method string, params any) []a2a.StreamResponse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(rpcBody(method, params))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("Content-Type %q, body %s", ct, raw)
	}
	var out []a2a.StreamResponse
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			JSONRPC string             `json:"jsonrpc"`
			ID      int                `json:"id"`
			Result  a2a.StreamResponse `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.JSONRPC != "2.0" || ev.ID != 1 {
			t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev.Result)
	}
	return out
}

// legacyStream posts an A2A 0.3 message/stream (no version header) and
// returns its events.
func legacyStream(t *testing.T, url string, params any) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(rpcBody("message/stream", params)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev.Result)
	}
	return out
}
