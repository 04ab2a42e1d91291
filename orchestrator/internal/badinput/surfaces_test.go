package badinput

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bridge/a2a"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/gateway"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
)

// surfaces are the mesh's HTTP and MCP faces, served in-process on the
// catalogue's mesh: the gateway's API, the A2A bridge and the MCP server.
type surfaces struct {
	gw  *httptest.Server
	a2a *httptest.Server
	mcp *meshmcp.Server
}

func startSurfaces(t *testing.T, m *meshtest.Mesh) surfaces {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gw, err := gateway.New(ctx, m.Srv.Conn(t), gateway.WithValidator(orchestrator.ValidatePipeline))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)
	h, err := a2a.NewHandler(ctx, m.Srv.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	as := httptest.NewServer(h)
	t.Cleanup(as.Close)
	reg, err := meshcore.NewRegistry(ctx, m.Res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	ms, err := meshmcp.NewServer(m.Srv.Conn(t), m.Res, reg, meshmcp.WithTaskTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); ms.Follow(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := reg.Wait(wctx, text.Name, 1); err != nil {
		t.Fatal(err)
	}
	ms.Sync()
	sf := surfaces{gw: hs, a2a: as, mcp: ms}
	// The gateway and the A2A bridge follow the registry on their own.
	for _, u := range []string{hs.URL + "/api/agents/" + text.Name, as.URL + a2a.PathAgents + "/" + text.Name + "/.well-known/agent-card.json"} {
		if !fixture.Within(10*time.Second, func() bool {
			resp, err := http.Get(u)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}) {
			t.Fatalf("%s does not list %s after 10s", u, text.Name)
		}
	}
	return sf
}

// reply is what an HTTP, A2A or MCP surface answered: the HTTP status and
// the code of its error (the gateway's error.code, a JSON-RPC error code,
// an MCP tool error's code), "" when it succeeded.
type reply struct {
	status int
	code   string
	body   string
}

// errTransport marks a request that got no HTTP answer at all (the
// connection closed: a handler that crashed).
var errTransport = errors.New("no answer")

// httpDo sends a request to base+path and reads the answer's error code
// from a gateway error body ({"error":{"code":...}}).
func httpDo(ctx context.Context, method, url, contentType string, body []byte, header ...string) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		return reply{}, fmt.Errorf("%w: %v", errTransport, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return reply{}, fmt.Errorf("%w: reading the body: %v", errTransport, err)
	}
	r := reply{status: resp.StatusCode, body: string(b)}
	var e struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || e.Error.Code == "" || e.Error.Message == "" {
			r.code = "(no coded JSON error)"
		} else {
			r.code = e.Error.Code
		}
	}
	return r, nil
}

// a2aDo posts a JSON-RPC body to the A2A bridge at path with A2A-Version
// 1.0 and reads the error code of its answer.
func a2aDo(ctx context.Context, url, body string) (reply, error) {
	r, err := httpDo(ctx, http.MethodPost, url, "application/json", []byte(body), a2a.HeaderVersion, "1.0")
	if err != nil || r.status != http.StatusOK {
		return r, err
	}
	return a2aReply(r), nil
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// mcpCall calls tool with args on a session of its own and reads the tool
// error's code ("" when the call succeeded).
func (s *shared) mcpCall(ctx context.Context, tool string, args any) (reply, error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.mcp.MCP().Connect(ctx, st, nil)
	if err != nil {
		return reply{}, err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "badinput", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return reply{}, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		// A protocol error (an unknown tool): JSON-RPC's own.
		return reply{code: "rpc", body: err.Error()}, nil
	}
	r := reply{status: http.StatusOK}
	if res.IsError {
		sc, _ := res.StructuredContent.(map[string]any)
		code, _ := sc["code"].(string)
		txt := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				txt = tc.Text
			}
		}
		if code == "" || !strings.HasPrefix(txt, code+": ") {
			code = "(no coded tool error)"
		}
		r.code, r.body = code, txt
	}
	return r, nil
}
